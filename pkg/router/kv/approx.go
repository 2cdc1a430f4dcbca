package kv

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

// Approximate-mode defaults (spec §3.5).
const (
	defaultApproxTTL              = 120 * time.Second
	defaultApproxMaxTreeSize      = 1 << 20
	defaultApproxPruneTargetRatio = 0.8
)

// approxOptions configures newApproxIndexer. Zero fields take the
// defaults.
type approxOptions struct {
	// TTL is how long a routed block is assumed cached after the last
	// routing decision that included it (defaultApproxTTL).
	TTL time.Duration
	// MaxTreeSize is the number of blocks (over all workers) above which
	// the oldest entries are pruned (defaultApproxMaxTreeSize).
	MaxTreeSize int
	// PruneTargetRatio: pruning stops at floor(MaxTreeSize·ratio) blocks
	// (defaultApproxPruneTargetRatio); must be in (0, 1].
	PruneTargetRatio float64
	// Clock returns the current time (time.Now).
	Clock func() time.Time
	// Metrics is passed to the wrapped indexer.
	Metrics *indexerMetrics
}

// approxIndexer is the approximate mode for routers without KV events
// (spec §3.5): each routing decision is recorded as if the chosen worker
// had cached the prompt's blocks, and each recorded block is forgotten
// TTL after its last recording, or earlier when the tree grows past
// MaxTreeSize. It is safe for concurrent use; FindMatches runs in
// parallel with everything, the other methods are serialised. Run owns
// the expiry loop.
type approxIndexer struct {
	idx    *indexer
	ttl    time.Duration
	max    int
	target int
	clock  func() time.Time
	wake   chan struct{} // nudges Run when a new entry may expire first

	mu     sync.Mutex // serialises mutations; guards timers and queue
	timers map[approxKey]approxTimer
	queue  approxHeap
}

// newApproxIndexer returns an empty approximate indexer.
func newApproxIndexer(opts approxOptions) *approxIndexer {
	if opts.TTL <= 0 {
		opts.TTL = defaultApproxTTL
	}
	if opts.MaxTreeSize <= 0 {
		opts.MaxTreeSize = defaultApproxMaxTreeSize
	}
	if !(opts.PruneTargetRatio > 0 && opts.PruneTargetRatio <= 1) {
		opts.PruneTargetRatio = defaultApproxPruneTargetRatio
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	return &approxIndexer{
		idx:    newIndexer(indexerOptions{Metrics: opts.Metrics}),
		ttl:    opts.TTL,
		max:    opts.MaxTreeSize,
		target: int(float64(opts.MaxTreeSize) * opts.PruneTargetRatio),
		clock:  opts.Clock,
		wake:   make(chan struct{}, 1),
		timers: make(map[approxKey]approxTimer),
	}
}

// Run expires recorded blocks until ctx ends, then returns nil: it sleeps
// until the earliest expiry (or until a recording may have moved it) and
// turns every expired entry into a removal.
func (a *approxIndexer) Run(ctx context.Context) error {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		wait := a.ttl
		if next, ok := a.expire(); ok {
			wait = next.Sub(a.clock())
		}
		t.Reset(max(wait, 0))
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-a.wake:
		}
	}
}

// RecordRouting records that w was chosen for a prompt with these local
// hashes: a stored chain from the root, one block per hash, with block
// hash kvblock.SeqHashes(local)[i]. Every block's expiry becomes now+TTL;
// if the tree then holds more than MaxTreeSize blocks it is pruned.
func (a *approxIndexer) RecordRouting(w Worker, local []uint64) {
	if len(local) == 0 {
		return
	}
	seq := kvblock.SeqHashes(local)
	blocks := make([]kvblock.StoredBlock, len(local))
	for i := range local {
		blocks[i] = kvblock.StoredBlock{BlockHash: seq[i], TokensHash: local[i]}
	}
	ev := kvblock.RouterEvent{WorkerID: w.ID, Event: kvblock.KVCacheEvent{DPRank: w.DPRank, Data: kvblock.Stored(nil, blocks...)}}

	a.mu.Lock()
	defer a.mu.Unlock()
	// A stored chain from the root cannot fail, except for a
	// self-referencing one (hash collisions); what was applied is kept
	// and timed either way.
	_ = a.idx.Apply(context.Background(), ev)
	at := a.clock().Add(a.ttl).UnixNano()
	for i, h := range seq {
		k := approxKey{w, h}
		a.timers[k] = approxTimer{at: at, pos: uint32(i)}
		heap.Push(&a.queue, approxEntry{at: at, pos: uint32(i), key: k})
	}
	if a.idx.Size() > a.max {
		a.pruneLocked()
	}
	a.compactLocked()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// FindMatches is indexer.FindMatches over the recorded blocks.
func (a *approxIndexer) FindMatches(local []uint64) overlapScores {
	return a.idx.FindMatches(local)
}

// FindMatchesInto is indexer.FindMatchesInto over the recorded blocks.
func (a *approxIndexer) FindMatchesInto(m *matches, local []uint64) {
	a.idx.FindMatchesInto(m, local)
}

// RemoveWorker forgets every dp rank of worker id.
func (a *approxIndexer) RemoveWorker(id uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.idx.RemoveWorker(id)
	for k := range a.timers {
		if k.w.ID == id {
			delete(a.timers, k) // its queue entries are now stale
		}
	}
	a.compactLocked()
}

// Size returns the number of recorded blocks over all workers.
func (a *approxIndexer) Size() int { return a.idx.Size() }

// expire removes every entry due at the clock's now and returns the next
// expiry, if any.
func (a *approxIndexer) expire() (next time.Time, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.clock().UnixNano()
	for len(a.queue) > 0 {
		e := a.queue[0]
		if !a.live(e) {
			heap.Pop(&a.queue)
			continue
		}
		if e.at > now {
			return time.Unix(0, e.at), true
		}
		heap.Pop(&a.queue)
		a.removeLocked(e.key)
	}
	return time.Time{}, false
}

// pruneLocked removes entries, earliest expiry first and deeper blocks
// first among equal expiries, until the tree is at the target size.
func (a *approxIndexer) pruneLocked() {
	for a.idx.Size() > a.target && len(a.queue) > 0 {
		e := heap.Pop(&a.queue).(approxEntry)
		if a.live(e) {
			a.removeLocked(e.key)
		}
	}
}

// live reports whether e is the current timer of its key.
func (a *approxIndexer) live(e approxEntry) bool {
	t, ok := a.timers[e.key]
	return ok && t.at == e.at && t.pos == e.pos
}

// removeLocked forgets one recorded block.
func (a *approxIndexer) removeLocked(k approxKey) {
	delete(a.timers, k)
	ev := kvblock.RouterEvent{WorkerID: k.w.ID, Event: kvblock.KVCacheEvent{DPRank: k.w.DPRank, Data: kvblock.Removed(k.hash)}}
	_ = a.idx.Apply(context.Background(), ev) // a block removed with its parent's subtree is still in its lookup
}

// compactLocked rebuilds the queue from the live timers when stale
// entries dominate it (more than 50 per live one, as the reference does).
func (a *approxIndexer) compactLocked() {
	if len(a.queue) <= 64 || len(a.queue) <= 50*len(a.timers) {
		return
	}
	q := make(approxHeap, 0, len(a.timers))
	for k, t := range a.timers {
		q = append(q, approxEntry{at: t.at, pos: t.pos, key: k})
	}
	heap.Init(&q)
	a.queue = q
}
