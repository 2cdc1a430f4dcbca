package kv

// activeLoad is the load of one (worker, dp rank) as published on the
// kv_metrics subject (the reference system's activeLoad): routers publish
// their tracked decode blocks and prefill tokens (sequences does, through
// sequencesDeps.OnLoad); workers may publish their own block usage. Nil
// fields are unknown and written as null.
type activeLoad struct {
	// WorkerID is the worker's instance id.
	WorkerID uint64 `json:"worker_id"`
	// DPRank is the data-parallel rank (0 when absent).
	DPRank uint32 `json:"dp_rank"`
	// ActiveDecodeBlocks are the KV blocks of the rank's active requests.
	ActiveDecodeBlocks *uint64 `json:"active_decode_blocks"`
	// ActivePrefillTokens are routed prompt tokens not yet prefilled (the
	// router's view).
	ActivePrefillTokens *uint64 `json:"active_prefill_tokens"`
	// KVUsedBlocks are the KV blocks in use as the worker reports them
	// (E2 workers); omitted when unknown.
	KVUsedBlocks *uint64 `json:"kv_used_blocks,omitempty"`
}
