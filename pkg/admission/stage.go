package admission

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// Defaults of the zero Config fields.
const (
	// DefaultQueueTimeout bounds a request's wait in the queue: long
	// enough to ride out a burst of a few typical answers (seconds each),
	// short enough that a client learns of a standing overload well
	// within common HTTP client timeouts (60 s and more).
	DefaultQueueTimeout = 30 * time.Second
	// DefaultRecheck is how often waiting requests look again at the
	// workers' published load, which frees no slot of this frontend.
	DefaultRecheck = 100 * time.Millisecond
)

// WorkerLoad is one available worker's load as the stage weighs it.
type WorkerLoad struct {
	// ID is the worker's instance id.
	ID uint64
	// Requests are this frontend's requests in flight to the worker,
	// counted from the moment they are sent to it (router.Load).
	Requests int
	// PrefillTokens are the prompt tokens of those requests that have
	// not produced their first output yet.
	PrefillTokens int
	// Busy marks a worker saturated by what the stage does not count
	// itself: its published load (other frontends' requests too), the KV
	// router's busy thresholds, or a refusal a moment ago.
	Busy bool
}

// Workers is the model's workers as the stage sees them (the pipeline's
// view over its push router).
type Workers interface {
	// Loads returns the loads of the workers that can take requests now,
	// and the requests this frontend has in flight to any worker,
	// available or not.
	Loads() (workers []WorkerLoad, routed int)
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
	// Policy orders the queue: PolicyFCFS ("" too), PolicyLCFS or
	// PolicyWSPT.
	Policy string
	// Capacity is the requests a worker may have in flight from this
	// frontend: the card's max_num_seqs times its data-parallel size; 0
	// when the card does not say.
	Capacity int
	// WorkerLimit is the capacity of a worker whose card does not say; 0
	// is unlimited (such workers are never saturated by count).
	WorkerLimit int
	// TokenBudget saturates a worker whose prefill tokens in flight
	// exceed it: --router-queue-threshold times the card's
	// max_num_batched_tokens times its data-parallel size; 0 is off.
	TokenBudget int
	// Recheck is how often a waiting request looks again at the workers'
	// published load (0: DefaultRecheck).
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
	order   func(*waiter) float64
	pending prometheus.Gauge // the queue-length gauge; nil without metrics

	mu       sync.Mutex
	admitted int // requests holding a slot: admitted, not yet ended
	queue    waitQueue
	seq      uint64
	meanWait time.Duration // moving mean of the waits of requests admitted from the queue
}

var _ backend.Generator = (*Stage)(nil)

// New returns a model's stage, admitting onto workers. It is built before
// the routers it gates (they ask it for Unsaturated workers and Kick it
// when their loads change); Before puts it in front of the chain. An
// unknown Config.Policy is taken for PolicyFCFS (cmd/frontend validates
// the flag).
func New(workers Workers, cfg Config) *Stage {
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
	s := &Stage{workers: workers, cfg: cfg, log: log, order: orderOf(cfg.Policy), pending: cfg.Metrics.pendingGauge(cfg.Model)}
	cfg.Metrics.countSaturated(cfg.Model, s.saturatedWorkers)
	return s
}

// Before makes next the stage after s, whose Generate runs the admitted
// requests, and returns s. Call it once, before s serves a request.
func (s *Stage) Before(next backend.Generator) *Stage {
	s.next = next
	return s
}

// waiter is one request waiting for a slot.
type waiter struct {
	arrival  time.Time
	jump     time.Duration // its priority jump
	isl      int           // its prompt tokens
	key      float64       // its place in the queue (Config.Policy); smallest first
	seq      uint64        // arrival order, for equal keys
	index    int           // in the heap; -1 once out of it
	ready    chan struct{}
	admitted bool // guarded by Stage.mu
}

// Generate admits req, waiting in the queue while the model is
// saturated, and runs it through the next stage. When a worker refuses
// it as full, or does not accept it in time, before anything was
// emitted, the request waits again (in its original place) for another
// worker, within its queue timeout.
func (s *Stage) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	if pinned(req) {
		s.mu.Lock()
		s.admitted++
		s.mu.Unlock()
		err := s.run(ctx, req, emit, new(bool))
		if reason := workerRefusal(err); reason != "" {
			s.mu.Lock()
			err = s.refuseLocked(reason, 0, err)
			s.mu.Unlock()
		}
		return err
	}
	s.mu.Lock()
	s.seq++
	w := &waiter{arrival: time.Now(), jump: jump(req), isl: len(req.TokenIDs), seq: s.seq, index: -1}
	w.key = s.order(w)
	s.mu.Unlock()
	for again := false; ; again = true {
		if err := s.admit(ctx, w, again); err != nil {
			return err
		}
		emitted := false
		err := s.run(ctx, req, emit, &emitted)
		reason := workerRefusal(err)
		if reason == "" || emitted || ctx.Err() != nil {
			return err
		}
		// A worker refused it before it started: wait for another.
		s.mu.Lock()
		if s.cfg.QueueMax == 0 || time.Since(w.arrival) >= s.cfg.QueueTimeout {
			err = s.refuseLocked(reason, time.Since(w.arrival), err)
			s.mu.Unlock()
			return err
		}
		s.mu.Unlock()
		s.cfg.Metrics.requeue(s.cfg.Model, reason)
		s.log.DebugContext(ctx, "admission: a worker refused the request; it waits for another", "model", s.cfg.Model, "reason", reason, "err", err)
		// Let the refusal be seen (the router marks the worker busy)
		// before looking for room again.
		pause := time.NewTimer(s.cfg.Recheck)
		select {
		case <-pause.C:
		case <-ctx.Done():
			pause.Stop()
			return context.Cause(ctx)
		}
	}
}

// admit returns once w holds a slot, or with the refusal or the
// context's error. w waits at most the queue timeout from its arrival;
// again says it held a slot before (a worker refused it): it is not
// refused for a full queue.
func (s *Stage) admit(ctx context.Context, w *waiter, again bool) error {
	s.mu.Lock()
	s.dispatchLocked()
	if s.queue.Len() == 0 && s.roomLocked() {
		s.admitted++
		s.publishLocked()
		s.mu.Unlock()
		return nil
	}
	if s.queue.Len() >= s.cfg.QueueMax && !again {
		err := s.refuseLocked(ReasonQueueFull, 0, nil)
		s.mu.Unlock()
		return err
	}
	w.ready, w.admitted = make(chan struct{}), false
	s.queue.push(w)
	s.dispatchLocked() // a higher-priority arrival may go first
	s.publishLocked()
	s.mu.Unlock()

	timeout := time.NewTimer(max(0, s.cfg.QueueTimeout-time.Since(w.arrival)))
	defer timeout.Stop()
	recheck := time.NewTicker(s.cfg.Recheck)
	defer recheck.Stop()
	for {
		select {
		case <-w.ready:
			s.waited(time.Since(w.arrival))
			return nil
		case <-recheck.C:
			s.Kick()
		case <-ctx.Done():
			if s.leave(w) {
				s.waited(time.Since(w.arrival))
				s.release() // admitted as it left: give the slot back
			}
			return context.Cause(ctx)
		case <-timeout.C:
			s.mu.Lock()
			if w.admitted { // admitted as the timer fired: take it
				s.mu.Unlock()
				s.waited(time.Since(w.arrival))
				return nil
			}
			s.queue.remove(w)
			waited := time.Since(w.arrival)
			err := s.refuseLocked(ReasonQueueTimeout, waited, nil)
			s.publishLocked()
			s.mu.Unlock()
			s.log.InfoContext(ctx, "admission: request refused after waiting in the queue", "model", s.cfg.Model, "waited", waited.Round(time.Millisecond))
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
	s.queue.remove(w)
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
func (s *Stage) refuseLocked(reason string, waited time.Duration, cause error) error {
	s.cfg.Metrics.refusal(s.cfg.Model, reason)
	return &RefusedError{Model: s.cfg.Model, Reason: reason, Waiting: s.queue.Len(), Waited: waited, RetryAfter: s.retryAfterLocked(), Cause: cause}
}

// RetryAfter is how long a client refused now should wait before it
// retries: the recent mean wait in the queue, at least a second and at
// most the queue timeout.
func (s *Stage) RetryAfter() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.retryAfterLocked()
}

func (s *Stage) retryAfterLocked() time.Duration {
	return min(max(s.meanWait, time.Second), max(s.cfg.QueueTimeout, time.Second)).Round(time.Second)
}

// Refused counts a refusal of the model's requests made before the stage
// (the frontend's per-tenant limit) under reason.
func (s *Stage) Refused(reason string) { s.cfg.Metrics.refusal(s.cfg.Model, reason) }

// run sends an admitted request on, holding its slot until its stream
// ends; emitted tells whether an output reached emit.
func (s *Stage) run(ctx context.Context, req *backend.Request, emit func(*backend.Output) error, emitted *bool) error {
	defer s.release()
	return s.next.Generate(ctx, req, func(out *backend.Output) error {
		*emitted = true
		return emit(out)
	})
}

// release gives back a request's slot and hands it to the queue.
func (s *Stage) release() {
	s.mu.Lock()
	s.admitted--
	s.dispatchLocked()
	s.publishLocked()
	s.mu.Unlock()
}

// Kick looks again at the workers' loads and admits the head of the
// queue while there is room: the push router calls it when a request
// frees capacity (router.PushRouter.OnLoadChange), the pipeline when a
// worker published its load, waiters every Config.Recheck. It does
// nothing while nobody waits.
func (s *Stage) Kick() {
	s.mu.Lock()
	if s.queue.Len() > 0 {
		s.dispatchLocked()
		s.publishLocked()
	}
	s.mu.Unlock()
}

// dispatchLocked admits the head of the queue while there is room.
func (s *Stage) dispatchLocked() {
	for s.queue.Len() > 0 && s.roomLocked() {
		w := s.queue.pop()
		w.admitted = true
		s.admitted++
		close(w.ready)
	}
}

// roomLocked reports whether one more request may be admitted: the model
// has no available worker (the router answers that), or the admitted
// requests not yet sent to a worker leave headroom on the workers that
// are not saturated.
func (s *Stage) roomLocked() bool {
	loads, routed := s.workers.Loads()
	if len(loads) == 0 {
		return true
	}
	c := s.capacity()
	headroom := 0
	for _, l := range loads {
		if s.saturated(l) {
			continue
		}
		if c <= 0 {
			return true
		}
		headroom += c - l.Requests
	}
	return max(0, s.admitted-routed) < headroom
}

// saturated applies the saturation rules to one worker: its published
// load or a refusal (Busy), its requests against its capacity, its
// prefill tokens against the token budget.
func (s *Stage) saturated(l WorkerLoad) bool {
	c := s.capacity()
	return l.Busy || (c > 0 && l.Requests >= c) || (s.cfg.TokenBudget > 0 && l.PrefillTokens > s.cfg.TokenBudget)
}

// capacity is a worker's capacity; 0 is unlimited.
func (s *Stage) capacity() int {
	if s.cfg.Capacity > 0 {
		return s.cfg.Capacity
	}
	return s.cfg.WorkerLimit
}

// publishLocked updates the queue-length gauge (the saturated workers
// are counted when the metrics are collected: saturatedWorkers).
func (s *Stage) publishLocked() {
	if s.pending != nil {
		s.pending.Set(float64(s.queue.Len()))
	}
}

// saturatedWorkers counts the model's saturated workers.
func (s *Stage) saturatedWorkers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	loads, _ := s.workers.Loads()
	n := 0
	for _, l := range loads {
		if s.saturated(l) {
			n++
		}
	}
	return n
}

// Unsaturated returns the ids among candidates that are not saturated,
// or candidates itself when all are (or none is known): a router can
// then send the admitted requests where there is room.
func (s *Stage) Unsaturated(candidates []uint64) []uint64 {
	loads, _ := s.workers.Loads()
	full := make(map[uint64]bool, len(loads))
	for _, l := range loads {
		if s.saturated(l) {
			full[l.ID] = true
		}
	}
	if len(full) == 0 {
		return candidates
	}
	var out []uint64
	for _, id := range candidates {
		if !full[id] {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return candidates
	}
	return out
}

// Load reports the requests holding a slot and waiting; for tests and
// debugging.
func (s *Stage) Load() (admitted, waiting int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.admitted, s.queue.Len()
}

// pinned reports whether the client chose the worker.
func pinned(req *backend.Request) bool {
	r := req.Routing
	return r != nil && (r.BackendInstanceID != nil || r.PrefillWorkerID != nil || r.DecodeWorkerID != nil)
}

// jump is the request's priority jump (never negative).
func jump(req *backend.Request) time.Duration {
	if r := req.Routing; r != nil && r.PriorityJump != nil && *r.PriorityJump > 0 {
		return time.Duration(min(*r.PriorityJump, 1e9) * float64(time.Second))
	}
	return 0
}

// workerRefusal names a worker's refusal of a request that had not
// started: ReasonAckTimeout for a worker that did not accept it in time,
// ReasonWorkersBusy for the KV router finding every worker busy,
// ReasonWorkerFull for a worker that said it was full; "" for anything
// else.
func workerRefusal(err error) string {
	switch {
	case err == nil || errors.Is(err, ErrRefused):
		return ""
	case errors.Is(err, runtime.ErrAckTimeout):
		return ReasonAckTimeout
	case errors.Is(err, runtime.ErrResourceExhausted):
		return ReasonWorkerFull
	case errors.Is(err, runtime.ErrWorkerOverloaded):
		return ReasonWorkersBusy
	}
	return ""
}
