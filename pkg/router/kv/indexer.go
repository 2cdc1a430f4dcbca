// indexer design notes (spec §3.1–3.4).
//
// The indexer is one radix tree shared by all workers plus, per
// (worker, dp rank), a lookup from the engine's block hash to the tree
// node. It owns no goroutines: every call does its work on the caller's
// goroutine, and Run only blocks until its context ends (it exists so the
// indexer composes like the other owners).
//
// Locking is fine-grained so that different workers' events and
// FindMatches proceed in parallel:
//
//   - Every (worker, dp rank) has its own mutex (workerState.mu) that
//     serialises that worker's events, ClearWorker and RemoveWorker. It
//     guards the worker's lookup map, which nobody else touches, so the
//     per-block map work of different workers never contends.
//   - Every tree node has its own sync.RWMutex guarding its children and
//     its worker set (a sorted []uint32 of dense worker indexes, the first
//     two stored inline). Writers hold at most one node lock at a time
//     while walking: add the worker to the node, find or link the next
//     child, release, move on. A node the worker is already in whose child
//     exists needs only a read lock, so re-stored shared prefixes (the
//     hottest nodes) do not serialise writers. The one place that holds
//     two node locks is unlinking an emptied node from its parent: it
//     locks the parent and only try-locks the child, so no lock order can
//     deadlock (if the try fails, the empty node stays linked, which is
//     harmless).
//   - FindMatchesInto takes read locks only, one node at a time. Per level
//     it compares the node's worker count and a 64-bit XOR fingerprint of
//     its worker set with the active set's; only when they differ (a
//     worker stops matching) does it intersect the sorted sets. A level
//     costs one map or inline-child lookup, one RLock/RUnlock and two word
//     compares. Its scratch space and its result live in a matches the
//     caller owns and reuses: the result is an array indexed by dense
//     worker index whose entries are stamped per query, so it needs no
//     clearing and a query allocates nothing. FindMatches wraps it and
//     copies the result into maps, which at 1,000 workers (about 630
//     scored each) costs several times the walk.
//   - A small registry maps Worker to its state and dense index. It is
//     copy-on-write: registering or removing a worker (rare) copies it
//     under regMu and publishes the copy, so queries and matches.Overlap
//     read it without a lock. Indexes are never reused, so a stale index
//     can never be mistaken for a new worker. Sizes are atomics, so tree
//     sizes need no lookup lock.
//
// Alternatives: a global lock serialises every event and query; a single
// owner goroutine (the reference KvIndexer) adds a channel hop per call
// and cannot use a second core; sharding whole trees by worker makes every
// query walk every shard. The reference ThreadPoolIndexer shards writes
// onto sticky threads; here the callers' goroutines play that role: apply
// different workers' events from different goroutines (one per worker, or
// a pool sharded by worker id) and they proceed in parallel. One worker's
// events must be applied in order by the caller (the event plane delivers
// them in order); Apply serialises concurrent calls for the same worker but
// cannot know their intended order.
//
// Measured (indexer_bench_test.go, 2-core AMD EPYC shared with other
// jobs, so ranges): 64-block stored events plus 48-block evictions at
// 3-4.7 M block events/s on one goroutine and 4-8.6 M/s with GOMAXPROCS=2
// goroutines. Matching a 64-block prompt (FindMatchesInto into a reused
// matches) takes 0.3 µs p50 over 100 workers and 5 µs over 1,000 (0.4
// and 5.5 µs with events applied concurrently); FindMatches, which
// returns maps, 4 and 31 µs (docs/benchmarks.md, issue 15).
//
// Consistency: FindMatches sees every node atomically but an event is not
// atomic as a whole, so a query racing with a stored event may see a
// prefix of it. That is the reference's behaviour too and harmless for
// routing.
//
// Go-port choices (deviations from the E1 reference, all invisible for
// engine-produced event streams): nodes that lose their last worker are
// unlinked from their parent instead of lingering (spec §3.1 allows it);
// reusing a node from the worker's lookup is refused with
// errInvalidBlockSequence when it is the current node or one of its
// ancestors (the reference only catches the current node, and would build
// a cycle otherwise), and a lookup node that is still linked elsewhere is
// not linked a second time (a fresh node is made, so the tree stays a
// tree); a worker whose lookup entry for a hash is re-pointed to another
// node leaves the old node (the reference leaves it there forever);
// scores are the exact contiguous prefix depth of each worker even when a
// worker is missing from a middle block (the reference's set-size
// shortcut assumes that never happens); Cleared clears the emitting
// (worker, dp rank) only (E2), like ClearWorker.

package kv

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

// Worker is a KV cache owner: an instance id and a data-parallel rank.
type Worker struct {
	// ID is the worker's discovery (lease) instance id.
	ID uint64
	// DPRank is the data-parallel rank within the worker.
	DPRank uint32
}

// overlapScores is the result of a prefix match (spec §3.2).
type overlapScores struct {
	// Scores holds, for each worker that caches at least the request's
	// first block, the number of leading blocks of the request it caches
	// (a contiguous prefix).
	Scores map[Worker]uint32
	// TreeSizes holds the total number of blocks each scored worker
	// caches, as a tie-breaker.
	TreeSizes map[Worker]int
}

var _ overlaps = overlapScores{}

// Overlap returns w's entries in o.Scores and o.TreeSizes (0 if absent).
func (o overlapScores) Overlap(w Worker) (score uint32, treeSize int) {
	return o.Scores[w], o.TreeSizes[w]
}

// indexerOptions configures newIndexer. The zero value is valid.
type indexerOptions struct {
	// Metrics receives the event counters and the size gauge; nil records
	// nothing.
	Metrics *indexerMetrics
}

// indexer is the radix tree of spec §3.1 over all workers' cached blocks,
// fed by their KV events and queried with FindMatches. It is safe for
// concurrent use: one worker's events are applied in the order Apply is
// called for it; events of different workers and FindMatches proceed in
// parallel (see the design notes at the top of indexer.go).
type indexer struct {
	metrics *indexerMetrics
	root    *node
	total   atomic.Int64 // sum of all lookup sizes

	regMu sync.Mutex // serialises registry writers
	reg   atomic.Pointer[registry]
}

// registry is an immutable snapshot of the registered workers: writers
// publish a modified copy (indexer.regMu held), readers load it.
type registry struct {
	byKey   map[Worker]*workerState
	byIndex []*workerState // nil once removed; indexes are never reused
}

// workerState is one (worker, dp rank): its lookup from block hash to tree
// node and its index in the node worker sets.
type workerState struct {
	w   Worker
	idx uint32
	fp  uint64 // fingerprint(idx), cached

	mu      sync.Mutex // serialises this worker's mutations; guards lookup and removed
	lookup  map[uint64]*node
	removed bool
	size    atomic.Int64 // len(lookup), readable without mu
}

// newIndexer returns an empty indexer.
func newIndexer(opts indexerOptions) *indexer {
	x := &indexer{metrics: opts.Metrics, root: &node{}}
	x.reg.Store(&registry{byKey: map[Worker]*workerState{}})
	return x
}

// Run blocks until ctx ends and returns nil. The indexer owns no
// goroutines (all work happens on the callers' goroutines); Run exists so
// it composes with the other owners.
func (x *indexer) Run(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// Apply applies one worker event (spec §3.1) on the caller's goroutine and
// returns once it is visible to FindMatches. The event's worker is
// registered even when the event fails. It returns an error matching
// errParentBlockNotFound (the stored event was skipped),
// errInvalidBlockSequence (the blocks before the offending one were
// applied), errBlockNotFound (the first missing hash of a removed event;
// the others were removed), an error wrapping kvblock.ErrBadEvent for an
// event without data, or ctx's error if ctx has ended.
func (x *indexer) Apply(ctx context.Context, ev kvblock.RouterEvent) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d := ev.Event.Data
	kind := d.Kind()
	if kind == "" {
		return fmt.Errorf("kv: apply: %w: no event data", kvblock.ErrBadEvent)
	}
	ws := x.lockWorker(Worker{ID: ev.WorkerID, DPRank: ev.Event.DPRank})
	before := ws.size.Load()
	var err error
	switch {
	case d.Stored != nil:
		err = x.store(ws, d.Stored)
	case d.Removed != nil:
		err = x.remove(ws, d.Removed.BlockHashes)
	default:
		x.clear(ws)
	}
	delta := ws.size.Load() - before
	x.total.Add(delta)
	ws.mu.Unlock()
	x.metrics.applied(kind, err)
	x.metrics.addSize(delta)
	if err != nil {
		return fmt.Errorf("%w (worker %d, dp rank %d, event %d)", err, ev.WorkerID, ev.Event.DPRank, ev.Event.EventID)
	}
	return nil
}

// RemoveWorker forgets every dp rank of worker id: its blocks leave the
// tree and it is no longer registered.
func (x *indexer) RemoveWorker(id uint64) {
	var states []*workerState
	for w, ws := range x.reg.Load().byKey {
		if w.ID == id {
			states = append(states, ws)
		}
	}
	for _, ws := range states {
		ws.mu.Lock()
		if ws.removed {
			ws.mu.Unlock()
			continue
		}
		before := ws.size.Load()
		x.clear(ws)
		x.total.Add(-before)
		x.metrics.addSize(-before)
		ws.removed = true
		x.regMu.Lock()
		old := x.reg.Load()
		r := &registry{byKey: maps.Clone(old.byKey), byIndex: slices.Clone(old.byIndex)}
		delete(r.byKey, ws.w)
		r.byIndex[ws.idx] = nil
		x.reg.Store(r)
		x.regMu.Unlock()
		ws.mu.Unlock()
	}
}

// ClearWorker drops every block of w (one dp rank) and keeps w registered
// with nothing cached, as a Cleared event does.
func (x *indexer) ClearWorker(w Worker) {
	ws := x.lockWorker(w)
	before := ws.size.Load()
	x.clear(ws)
	x.total.Add(-before)
	ws.mu.Unlock()
	x.metrics.addSize(-before)
}

// Workers returns the registered workers sorted by id, then dp rank.
func (x *indexer) Workers() []Worker {
	byKey := x.reg.Load().byKey
	out := make([]Worker, 0, len(byKey))
	for w := range byKey {
		out = append(out, w)
	}
	slices.SortFunc(out, cmpWorker)
	return out
}

// Size returns the number of cached blocks summed over all workers (the
// sum of their lookup sizes).
func (x *indexer) Size() int { return int(x.total.Load()) }

// lockWorker returns w's state, registering it if needed, with its mutex
// held.
func (x *indexer) lockWorker(w Worker) *workerState {
	for {
		ws := x.worker(w)
		ws.mu.Lock()
		if !ws.removed {
			return ws
		}
		ws.mu.Unlock() // removed meanwhile: register afresh
	}
}

// worker returns w's state, registering it if needed.
func (x *indexer) worker(w Worker) *workerState {
	if ws := x.reg.Load().byKey[w]; ws != nil {
		return ws
	}
	x.regMu.Lock()
	defer x.regMu.Unlock()
	old := x.reg.Load()
	if ws := old.byKey[w]; ws != nil {
		return ws
	}
	idx := uint32(len(old.byIndex))
	ws := &workerState{w: w, idx: idx, fp: fingerprint(idx), lookup: make(map[uint64]*node)}
	r := &registry{byKey: maps.Clone(old.byKey), byIndex: append(slices.Clone(old.byIndex), ws)}
	r.byKey[w] = ws
	x.reg.Store(r)
	return ws
}

// cmpWorker orders workers by id, then dp rank.
func cmpWorker(a, b Worker) int {
	if c := cmp.Compare(a.ID, b.ID); c != 0 {
		return c
	}
	return cmp.Compare(a.DPRank, b.DPRank)
}
