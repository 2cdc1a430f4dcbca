package kvblock

import "encoding/json"

// ForwardPassMetrics is a worker's load after a forward pass, per
// data-parallel rank (the E1 reference system's ForwardPassMetrics).
type ForwardPassMetrics struct {
	// WorkerStats are the request counters.
	WorkerStats WorkerStats `json:"worker_stats"`
	// KVStats are the KV-cache counters.
	KVStats KVStats `json:"kv_stats"`
	// SpecDecodeStats is speculative-decoding data, passed through
	// opaquely; nil is written as null.
	SpecDecodeStats json.RawMessage `json:"spec_decode_stats"`
}

// WorkerStats counts requests of one rank.
type WorkerStats struct {
	// DataParallelRank is the rank, nil when the worker is not data-parallel.
	DataParallelRank *uint32 `json:"data_parallel_rank"`
	// RequestActiveSlots is the number of running (decoding) requests.
	RequestActiveSlots uint64 `json:"request_active_slots"`
	// RequestTotalSlots is the request capacity.
	RequestTotalSlots uint64 `json:"request_total_slots"`
	// NumRequestsWaiting is the number of queued, not yet admitted requests.
	NumRequestsWaiting uint64 `json:"num_requests_waiting"`
}

// KVStats counts KV-cache blocks of one rank.
type KVStats struct {
	// KVActiveBlocks is the number of blocks in use by running requests.
	KVActiveBlocks uint64 `json:"kv_active_blocks"`
	// KVTotalBlocks is the cache capacity in blocks.
	KVTotalBlocks uint64 `json:"kv_total_blocks"`
	// GPUCacheUsagePerc is KVActiveBlocks/KVTotalBlocks, in [0, 1].
	GPUCacheUsagePerc float32 `json:"gpu_cache_usage_perc"`
	// GPUPrefixCacheHitRate is the recent prefix-cache hit rate, in [0, 1].
	GPUPrefixCacheHitRate float32 `json:"gpu_prefix_cache_hit_rate"`
}

// LoadEvent is the envelope of ForwardPassMetrics on the load-metrics
// subject (the reference system's LoadEvent).
type LoadEvent struct {
	// WorkerID is the publishing worker's instance id.
	WorkerID uint64 `json:"worker_id"`
	// Data is the load of one rank.
	Data ForwardPassMetrics `json:"data"`
}
