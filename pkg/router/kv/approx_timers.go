package kv

// approxKey is one recorded block of one worker.
type approxKey struct {
	w    Worker
	hash uint64 // the router's sequence hash
}

// approxTimer is a recorded block's expiry (Unix nanoseconds) and its
// position in the prompt.
type approxTimer struct {
	at  int64
	pos uint32
}

// approxEntry is a queued expiry; it is stale when its key's timer has
// moved on.
type approxEntry struct {
	at  int64
	pos uint32
	key approxKey
}

// approxHeap orders entries by expiry, then deeper position first (so
// prefixes outlive their extensions), then worker and hash for
// determinism. It implements heap.Interface.
type approxHeap []approxEntry

// Len is the number of entries; for container/heap.
func (h approxHeap) Len() int { return len(h) }

// Less orders entries as described on approxHeap.
func (h approxHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.at != b.at {
		return a.at < b.at
	}
	if a.pos != b.pos {
		return a.pos > b.pos
	}
	if c := cmpWorker(a.key.w, b.key.w); c != 0 {
		return c < 0
	}
	return a.key.hash < b.key.hash
}

// Swap swaps two entries; for container/heap.
func (h approxHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

// Push appends x (an approxEntry); for container/heap.
func (h *approxHeap) Push(x any) { *h = append(*h, x.(approxEntry)) }

// Pop removes the last entry; for container/heap.
func (h *approxHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
