package kv

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

// BusyThresholds are the overload thresholds (spec §4.5). A nil field
// disables its check, which is the default for all three; the JSON shape
// is the /busy_threshold API's.
type BusyThresholds struct {
	// ActiveDecodeBlocks is the fraction in [0, 1] of a rank's KV blocks
	// in use above which the rank is busy
	// (--active-decode-blocks-threshold).
	ActiveDecodeBlocks *float64 `json:"active_decode_blocks_threshold,omitempty"`
	// ActivePrefillTokens is the number of queued prompt tokens above
	// which a rank is busy (--active-prefill-tokens-threshold).
	ActivePrefillTokens *uint64 `json:"active_prefill_tokens_threshold,omitempty"`
	// ActivePrefillTokensFrac is the multiple (>= 0) of the rank's
	// max_num_batched_tokens above which it is busy
	// (--active-prefill-tokens-threshold-frac).
	ActivePrefillTokensFrac *float64 `json:"active_prefill_tokens_threshold_frac,omitempty"`
}

// Validate reports every out-of-range threshold.
func (t BusyThresholds) Validate() error {
	var errs []error
	if v := t.ActiveDecodeBlocks; v != nil && !(*v >= 0 && *v <= 1) {
		errs = append(errs, fmt.Errorf("kv: active decode blocks threshold %v not in [0, 1]", *v))
	}
	if v := t.ActivePrefillTokensFrac; v != nil && (!(*v >= 0) || math.IsInf(*v, 1)) {
		errs = append(errs, fmt.Errorf("kv: active prefill tokens threshold fraction %v must be finite and >= 0", *v))
	}
	return errors.Join(errs...)
}

// merge returns t with the non-nil fields of u, copied.
func (t BusyThresholds) merge(u BusyThresholds) BusyThresholds {
	if u.ActiveDecodeBlocks != nil {
		t.ActiveDecodeBlocks = new(*u.ActiveDecodeBlocks)
	}
	if u.ActivePrefillTokens != nil {
		t.ActivePrefillTokens = new(*u.ActivePrefillTokens)
	}
	if u.ActivePrefillTokensFrac != nil {
		t.ActivePrefillTokensFrac = new(*u.ActivePrefillTokensFrac)
	}
	return t
}

// LoadMonitor keeps the latest load of every (worker, dp rank) and decides
// which workers are busy: a rank is busy when its active prefill tokens
// exceed the absolute threshold or the fraction of max_num_batched_tokens,
// or when its used KV blocks over its total exceed the decode threshold;
// a worker is busy only when all its ranks are. Safe for concurrent use.
type LoadMonitor struct {
	mu      sync.RWMutex
	thr     BusyThresholds
	workers map[uint64]*loadWorker
}

type loadWorker struct {
	capacity    WorkerCapacity
	hasCapacity bool
	ranks       map[uint32]*loadRank
}

// loadRank is the latest of each signal for one rank.
type loadRank struct {
	kv    kvblock.KVStats // from the worker's ForwardPassMetrics
	hasKV bool
	ws    kvblock.WorkerStats // from the same
	at    time.Time           // when kv and ws arrived

	decodeBlocks  *uint64 // ActiveLoad.ActiveDecodeBlocks
	prefillTokens *uint64 // ActiveLoad.ActivePrefillTokens
	usedBlocks    *uint64 // ActiveLoad.KVUsedBlocks
}

// NewLoadMonitor returns a monitor with thresholds t, or t's validation
// error.
func NewLoadMonitor(t BusyThresholds) (*LoadMonitor, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return &LoadMonitor{thr: BusyThresholds{}.merge(t), workers: make(map[uint64]*loadWorker)}, nil
}

// Thresholds returns a copy of the current thresholds.
func (m *LoadMonitor) Thresholds() BusyThresholds {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return BusyThresholds{}.merge(m.thr)
}

// UpdateThresholds sets the non-nil fields of u, leaving the others as
// they are (POST /busy_threshold), and returns the thresholds now in
// force. An invalid update changes nothing.
func (m *LoadMonitor) UpdateThresholds(u BusyThresholds) (BusyThresholds, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	next := m.thr.merge(u)
	if err := next.Validate(); err != nil {
		return BusyThresholds{}.merge(m.thr), err
	}
	m.thr = next
	return BusyThresholds{}.merge(next), nil
}

// SetCapacity records a worker's capacity from its runtime config.
func (m *LoadMonitor) SetCapacity(workerID uint64, c WorkerCapacity) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.worker(workerID)
	w.capacity, w.hasCapacity = c, true
}

// RemoveWorker forgets a worker that left.
func (m *LoadMonitor) RemoveWorker(workerID uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.workers, workerID)
}

// ObserveLoadEvent records a worker's ForwardPassMetrics for its rank
// (data_parallel_rank, 0 when null).
func (m *LoadMonitor) ObserveLoadEvent(ev kvblock.LoadEvent) {
	var rank uint32
	if r := ev.Data.WorkerStats.DataParallelRank; r != nil {
		rank = *r
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rank(ev.WorkerID, rank)
	r.kv, r.hasKV = ev.Data.KVStats, true
	r.ws, r.at = ev.Data.WorkerStats, time.Now()
}

// ObserveActiveLoad records the non-nil fields of l.
func (m *LoadMonitor) ObserveActiveLoad(l activeLoad) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rank(l.WorkerID, l.DPRank)
	if l.ActiveDecodeBlocks != nil {
		r.decodeBlocks = new(*l.ActiveDecodeBlocks)
	}
	if l.ActivePrefillTokens != nil {
		r.prefillTokens = new(*l.ActivePrefillTokens)
	}
	if l.KVUsedBlocks != nil {
		r.usedBlocks = new(*l.KVUsedBlocks)
	}
}

// Busy reports whether every known rank of the worker is busy. The ranks
// are those of its capacity (DataParallelSize from DataParallelStartRank)
// when known, else the ranks it reported; a worker with no rank, and a
// rank with no data, is not busy. A nil monitor reports nothing busy.
func (m *LoadMonitor) Busy(workerID uint64) bool {
	if m == nil {
		return false
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	w := m.workers[workerID]
	if w == nil {
		return false
	}
	ranks := m.ranksOf(workerID, w)
	if len(ranks) == 0 {
		return false
	}
	for _, r := range ranks {
		if !m.rankBusy(w, w.ranks[r]) {
			return false
		}
	}
	return true
}

// publishedLoadTTL is how long a rank's published request counts are
// trusted: a worker publishes its load when it changes, and the load of a
// full worker changes with every forward pass, so counts older than this
// are those of a worker that went quiet (or whose last update was lost).
const publishedLoadTTL = 5 * time.Second

// Full reports whether every rank of the worker said, in its latest load
// event (within publishedLoadTTL), that it holds at least maxNumSeqs
// requests, running and waiting: full by its own count, which includes
// the requests of other frontends. A rank without a recent event is not
// full; maxNumSeqs 0 (unknown) is never reached. A nil monitor reports
// nothing full.
func (m *LoadMonitor) Full(workerID uint64, maxNumSeqs uint64) bool {
	if m == nil || maxNumSeqs == 0 {
		return false
	}
	now := time.Now()
	m.mu.RLock()
	defer m.mu.RUnlock()
	w := m.workers[workerID]
	if w == nil {
		return false
	}
	ranks := m.ranksOf(workerID, w)
	if len(ranks) == 0 {
		return false
	}
	for _, r := range ranks {
		lr := w.ranks[r]
		if lr == nil || !lr.hasKV || now.Sub(lr.at) > publishedLoadTTL || lr.ws.RequestActiveSlots+lr.ws.NumRequestsWaiting < maxNumSeqs {
			return false
		}
	}
	return true
}

// Saturated reports whether the worker is busy by the thresholds, or full
// by its published load (see Full).
func (m *LoadMonitor) Saturated(workerID uint64, maxNumSeqs uint64) bool {
	return m.Busy(workerID) || m.Full(workerID, maxNumSeqs)
}

// BusyWorkers returns the ids of the busy workers, sorted.
func (m *LoadMonitor) BusyWorkers() []uint64 {
	m.mu.RLock()
	ids := slices.Sorted(maps.Keys(m.workers))
	m.mu.RUnlock()
	return slices.DeleteFunc(ids, func(id uint64) bool { return !m.Busy(id) })
}

// rankBusy applies the thresholds to one rank; r may be nil. Called with
// m.mu held.
func (m *LoadMonitor) rankBusy(w *loadWorker, r *loadRank) bool {
	if r == nil {
		return false
	}
	if r.prefillTokens != nil {
		p := *r.prefillTokens
		if t := m.thr.ActivePrefillTokens; t != nil && p > *t {
			return true
		}
		if f := m.thr.ActivePrefillTokensFrac; f != nil && float64(p) > *f*float64(w.capacity.maxBatchedTokens()) {
			return true
		}
	}
	t := m.thr.ActiveDecodeBlocks
	if t == nil {
		return false
	}
	total := w.capacity.TotalKVBlocks
	if r.hasKV && r.kv.KVTotalBlocks > 0 {
		total = r.kv.KVTotalBlocks
	}
	if total == 0 {
		// Capacity unknown: only the worker's own usage fraction can tell.
		return r.hasKV && float64(r.kv.GPUCacheUsagePerc) > *t
	}
	over := func(used uint64) bool { return float64(used)/float64(total) > *t }
	return (r.hasKV && over(r.kv.KVActiveBlocks)) ||
		(r.usedBlocks != nil && over(*r.usedBlocks)) ||
		(r.decodeBlocks != nil && over(*r.decodeBlocks))
}

// ranksOf returns the worker's ranks: those of its capacity
// (DataParallelSize from DataParallelStartRank) when known, else the
// ranks it reported. Called with m.mu held.
func (m *LoadMonitor) ranksOf(workerID uint64, w *loadWorker) []uint32 {
	if !w.hasCapacity {
		return slices.Collect(maps.Keys(w.ranks))
	}
	var ranks []uint32
	for _, c := range dpRanks(workerID, w.capacity) {
		ranks = append(ranks, c.DPRank)
	}
	return ranks
}

func (m *LoadMonitor) worker(id uint64) *loadWorker {
	w := m.workers[id]
	if w == nil {
		w = &loadWorker{ranks: make(map[uint32]*loadRank)}
		m.workers[id] = w
	}
	return w
}

func (m *LoadMonitor) rank(id uint64, rank uint32) *loadRank {
	w := m.worker(id)
	r := w.ranks[rank]
	if r == nil {
		r = &loadRank{}
		w.ranks[rank] = r
	}
	return r
}
