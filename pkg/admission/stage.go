package admission

import (
	"container/heap"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// Queue policies (Config.Policy).
const (
	// PolicyFCFS serves the earliest effective arrival first: arrival
	// time less the request's priority jump.
	PolicyFCFS = "fcfs"
)

// Defaults of the zero Config fields.
const (
	// DefaultQueueTimeout bounds a request's wait in the queue: long
	// enough to ride out a burst of a few typical answers (seconds each),
	// short enough that a client learns of a standing overload well
	// within common HTTP client timeouts (60 s and more).
	DefaultQueueTimeout = 30 * time.Second
	// DefaultRecheck is how often waiting requests look again at busy
	// workers and joining workers, which free no slot of this frontend.
	DefaultRecheck = 100 * time.Millisecond
)

// Workers lists the model's workers that can take requests now, sorted
// (the pipeline's instance list).
type Workers interface {
	Available() []uint64
}

// BusyChecker tells whether a worker is busy by load the stage does not
// count itself (the KV router's busy thresholds: kv.Model).
type BusyChecker interface {
	Busy(workerID uint64) bool
}

// Config configures one model's stage.
type Config struct {
	// Model labels the metrics, log lines and refusals.
	Model string
	// QueueMax is the most requests that may wait; 0 refuses at once when
	// the model is saturated.
	QueueMax int
	// QueueTimeout is the longest wait in the queue (0:
	// DefaultQueueTimeout).
	QueueTimeout time.Duration
	// Policy orders the queue; "" and PolicyFCFS are the only one.
	Policy string
	// Capacity is the requests a worker may have in flight from this
	// frontend: the card's max_num_seqs times its data-parallel size; 0
	// when the card does not say.
	Capacity int
	// WorkerLimit is the capacity of a worker whose card does not say; 0
	// is unlimited (such workers are never saturated by count).
	WorkerLimit int
	// Busy, when set, marks workers saturated by their published load.
	Busy BusyChecker
	// Recheck is how often a waiting request looks again at busy and
	// joining workers (0: DefaultRecheck).
	Recheck time.Duration
	// Metrics receives the queue's metrics; nil records nothing.
	Metrics *Metrics
	// Logger receives the stage's log lines; nil discards.
	Logger *slog.Logger
}

// Stage is the admission stage of one model's chain. Build it with New.
type Stage struct {
	next    backend.Generator
	workers Workers
	cfg     Config
	log     *slog.Logger

	mu       sync.Mutex
	inflight map[uint64]int // requests in flight per worker, from their first output
	unplaced int            // admitted requests without an output yet
	queue    waitQueue
	seq      uint64
	meanWait time.Duration // moving mean of the waits of requests admitted from the queue
}

var _ backend.Generator = (*Stage)(nil)

// New returns the stage in front of next, admitting onto workers.
func New(next backend.Generator, workers Workers, cfg Config) *Stage {
	if cfg.QueueTimeout <= 0 {
		cfg.QueueTimeout = DefaultQueueTimeout
	}
	if cfg.Recheck <= 0 {
		cfg.Recheck = DefaultRecheck
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Stage{next: next, workers: workers, cfg: cfg, log: log, inflight: map[uint64]int{}}
}

// waiter is one queued request.
type waiter struct {
	key      int64  // effective arrival, ns: arrival less the priority jump
	seq      uint64 // arrival order, for equal keys
	index    int    // in the heap; -1 once out of it
	ready    chan struct{}
	admitted bool // guarded by Stage.mu
}

// Generate admits req, waiting in the queue while the model is
// saturated, and runs it through the next stage.
func (s *Stage) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	if pinned(req) {
		s.mu.Lock()
		s.unplaced++
		s.mu.Unlock()
		return s.run(ctx, req, emit)
	}
	if err := s.admit(ctx, req); err != nil {
		return err
	}
	return s.run(ctx, req, emit)
}

// admit returns once req holds a slot (counted as unplaced), or with the
// refusal or the context's error.
func (s *Stage) admit(ctx context.Context, req *backend.Request) error {
	now := time.Now()
	s.mu.Lock()
	s.dispatchLocked()
	if s.queue.Len() == 0 && s.roomLocked() {
		s.unplaced++
		s.publishLocked()
		s.mu.Unlock()
		return nil
	}
	if s.queue.Len() >= s.cfg.QueueMax {
		err := s.refuseLocked(ReasonQueueFull, 0)
		s.mu.Unlock()
		return err
	}
	s.seq++
	w := &waiter{key: now.UnixNano() - jump(req), seq: s.seq, ready: make(chan struct{})}
	heap.Push(&s.queue, w)
	s.dispatchLocked() // a higher-priority arrival may go first
	s.publishLocked()
	s.mu.Unlock()

	timeout := time.NewTimer(s.cfg.QueueTimeout)
	defer timeout.Stop()
	recheck := time.NewTicker(s.cfg.Recheck)
	defer recheck.Stop()
	for {
		select {
		case <-w.ready:
			s.waited(time.Since(now))
			return nil
		case <-recheck.C:
			s.mu.Lock()
			s.dispatchLocked()
			s.publishLocked()
			s.mu.Unlock()
		case <-ctx.Done():
			if s.leave(w) {
				s.waited(time.Since(now))
				s.release(0, false) // admitted as it left: give the slot back
			}
			return context.Cause(ctx)
		case <-timeout.C:
			s.mu.Lock()
			if w.admitted { // admitted as the timer fired: take it
				s.mu.Unlock()
				s.waited(time.Since(now))
				return nil
			}
			heap.Remove(&s.queue, w.index)
			err := s.refuseLocked(ReasonQueueTimeout, time.Since(now))
			s.publishLocked()
			s.mu.Unlock()
			s.log.InfoContext(ctx, "admission: request refused after waiting in the queue", "model", s.cfg.Model, "waited", time.Since(now).Round(time.Millisecond))
			return err
		}
	}
}

// leave takes w out of the queue; it reports whether w had been admitted
// already.
func (s *Stage) leave(w *waiter) (admitted bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.admitted {
		return true
	}
	heap.Remove(&s.queue, w.index)
	s.publishLocked()
	return false
}

// waited records the queue wait of an admitted request.
func (s *Stage) waited(d time.Duration) {
	s.cfg.Metrics.waited(s.cfg.Model, d)
	s.mu.Lock()
	s.meanWait += (d - s.meanWait) / 8
	s.mu.Unlock()
}

// refuseLocked counts a refusal and returns its error.
func (s *Stage) refuseLocked(reason string, waited time.Duration) error {
	s.cfg.Metrics.refusal(s.cfg.Model, reason)
	retry := min(max(s.meanWait, time.Second), max(s.cfg.QueueTimeout, time.Second))
	return &RefusedError{Model: s.cfg.Model, Reason: reason, Waiting: s.queue.Len(), Waited: waited, RetryAfter: retry.Round(time.Second)}
}

// run sends an admitted request on and tracks it to the end of its
// stream.
func (s *Stage) run(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	var worker uint64
	placed := false
	defer func() { s.release(worker, placed) }()
	return s.next.Generate(ctx, req, func(out *backend.Output) error {
		if p := out.Placement; p != nil && (!placed || p.WorkerID != worker) {
			s.move(worker, placed, p.WorkerID)
			worker, placed = p.WorkerID, true
		}
		return emit(out)
	})
}

// move counts a request against worker to, from worker from (or from the
// unplaced when it was not placed).
func (s *Stage) move(from uint64, placed bool, to uint64) {
	s.mu.Lock()
	s.dropLocked(from, placed)
	s.inflight[to]++
	s.dispatchLocked() // the previous worker has room again
	s.publishLocked()
	s.mu.Unlock()
}

// release ends a request's count and gives its slot to the queue.
func (s *Stage) release(worker uint64, placed bool) {
	s.mu.Lock()
	s.dropLocked(worker, placed)
	s.dispatchLocked()
	s.publishLocked()
	s.mu.Unlock()
}

func (s *Stage) dropLocked(worker uint64, placed bool) {
	if !placed {
		s.unplaced--
		return
	}
	if s.inflight[worker]--; s.inflight[worker] <= 0 {
		delete(s.inflight, worker)
	}
}

// dispatchLocked admits the head of the queue while there is room.
func (s *Stage) dispatchLocked() {
	for s.queue.Len() > 0 && s.roomLocked() {
		w := heap.Pop(&s.queue).(*waiter)
		w.admitted = true
		s.unplaced++
		close(w.ready)
	}
}

// roomLocked reports whether one more request may be admitted: the model
// has no available worker (the router answers that), or the unplaced
// requests leave headroom on the workers that are not busy.
func (s *Stage) roomLocked() bool {
	avail := s.workers.Available()
	if len(avail) == 0 {
		return true
	}
	c := s.capacity()
	headroom := 0
	for _, id := range avail {
		if s.cfg.Busy != nil && s.cfg.Busy.Busy(id) {
			continue
		}
		if c <= 0 {
			return true
		}
		headroom += max(0, c-s.inflight[id])
	}
	return s.unplaced < headroom
}

// capacity is a worker's capacity; 0 is unlimited.
func (s *Stage) capacity() int {
	if s.cfg.Capacity > 0 {
		return s.cfg.Capacity
	}
	return s.cfg.WorkerLimit
}

// publishLocked updates the gauges.
func (s *Stage) publishLocked() {
	if s.cfg.Metrics == nil {
		return
	}
	s.cfg.Metrics.state(s.cfg.Model, s.queue.Len(), s.saturatedLocked())
}

func (s *Stage) saturatedLocked() int {
	c, n := s.capacity(), 0
	for _, id := range s.workers.Available() {
		if (c > 0 && s.inflight[id] >= c) || (s.cfg.Busy != nil && s.cfg.Busy.Busy(id)) {
			n++
		}
	}
	return n
}

// Unsaturated returns the ids among candidates that are not saturated,
// or candidates itself when all are: a router policy can spread the
// admitted requests over the workers with room.
func (s *Stage) Unsaturated(candidates []uint64) []uint64 {
	c := s.capacity()
	if c <= 0 && s.cfg.Busy == nil {
		return candidates
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []uint64
	for _, id := range candidates {
		if (c <= 0 || s.inflight[id] < c) && (s.cfg.Busy == nil || !s.cfg.Busy.Busy(id)) {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return candidates
	}
	return out
}

// Load reports the requests in flight (placed per worker, and unplaced)
// and waiting; for tests and debugging.
func (s *Stage) Load() (inflight map[uint64]int, unplaced, waiting int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inflight = make(map[uint64]int, len(s.inflight))
	for id, n := range s.inflight {
		inflight[id] = n
	}
	return inflight, s.unplaced, s.queue.Len()
}

// pinned reports whether the client chose the worker.
func pinned(req *backend.Request) bool {
	r := req.Routing
	return r != nil && (r.BackendInstanceID != nil || r.PrefillWorkerID != nil || r.DecodeWorkerID != nil)
}

// jump is the request's priority jump in nanoseconds (never negative).
func jump(req *backend.Request) int64 {
	if r := req.Routing; r != nil && r.PriorityJump != nil && *r.PriorityJump > 0 {
		return int64(min(*r.PriorityJump, 1e9) * float64(time.Second))
	}
	return 0
}

// waitQueue is a min-heap of waiters by effective arrival, then arrival.
type waitQueue []*waiter

func (q waitQueue) Len() int { return len(q) }
func (q waitQueue) Less(i, j int) bool {
	if q[i].key != q[j].key {
		return q[i].key < q[j].key
	}
	return q[i].seq < q[j].seq
}
func (q waitQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}
func (q *waitQueue) Push(x any) {
	w := x.(*waiter)
	w.index = len(*q)
	*q = append(*q, w)
}
func (q *waitQueue) Pop() any {
	old := *q
	w := old[len(old)-1]
	old[len(old)-1] = nil
	w.index = -1
	*q = old[:len(old)-1]
	return w
}
