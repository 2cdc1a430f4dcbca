package kvblock

// ForwardPassMetrics is a worker's load after a forward pass, per
// data-parallel rank (the E1 reference system's ForwardPassMetrics).
type ForwardPassMetrics struct {
	// WorkerStats are the request counters.
	WorkerStats WorkerStats `json:"worker_stats"`
	// KVStats are the KV-cache counters.
	KVStats KVStats `json:"kv_stats"`
	// SpecDecodeStats are speculative-decoding counters; nil (written as
	// null) without speculative decoding.
	SpecDecodeStats *SpecDecodeStats `json:"spec_decode_stats"`
}

// SpecDecodeStats are a rank's speculative-decoding counters; nil fields
// are unknown.
type SpecDecodeStats struct {
	// NumSpecTokens is the number of speculative tokens per step.
	NumSpecTokens *uint32 `json:"num_spec_tokens"`
	// NumDrafts is the number of drafts.
	NumDrafts *uint32 `json:"num_drafts"`
	// NumDraftTokens is the number of drafted tokens.
	NumDraftTokens *uint32 `json:"num_draft_tokens"`
	// NumAcceptedTokens is the number of accepted draft tokens.
	NumAcceptedTokens *uint32 `json:"num_accepted_tokens"`
	// NumAcceptedTokensPerPos counts accepted tokens per draft position.
	NumAcceptedTokensPerPos []uint32 `json:"num_accepted_tokens_per_pos"`
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
