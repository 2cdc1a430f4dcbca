package kv

// DefaultMaxNumBatchedTokens stands for a worker's max_num_batched_tokens
// when its runtime config does not give it.
const DefaultMaxNumBatchedTokens = 10_000_000

// WorkerCapacity is what a worker's registered runtime config says about
// its capacity; zero fields are unknown.
type WorkerCapacity struct {
	// TotalKVBlocks is the KV cache size in blocks (total_kv_blocks).
	TotalKVBlocks uint64
	// MaxNumBatchedTokens is the prefill token budget per forward pass
	// (max_num_batched_tokens); 0 means DefaultMaxNumBatchedTokens.
	MaxNumBatchedTokens uint64
	// DataParallelSize is the number of dp ranks; 0 means 1.
	DataParallelSize uint32
	// DataParallelStartRank is the first dp rank (E2); usually 0.
	DataParallelStartRank uint32
}

// dpRanks expands a worker into its (worker, dp rank) candidates:
// ranks start .. start+size−1.
func dpRanks(workerID uint64, c WorkerCapacity) []Worker {
	n := max(c.DataParallelSize, 1)
	out := make([]Worker, n)
	for i := range n {
		out[i] = Worker{ID: workerID, DPRank: c.DataParallelStartRank + i}
	}
	return out
}

func (c WorkerCapacity) maxBatchedTokens() uint64 {
	if c.MaxNumBatchedTokens == 0 {
		return DefaultMaxNumBatchedTokens
	}
	return c.MaxNumBatchedTokens
}
