package mocker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// ErrAlreadyStarted is returned by a second Start.
var ErrAlreadyStarted = errors.New("mocker: already started")

// Engine is the simulated engine. It implements backend.Engine,
// backend.KVEventSource, backend.Aborter, backend.Quiescer and
// backend.LoraEngine.
type Engine struct {
	cfg   Config
	ranks []*rank
	next  atomic.Uint64 // round-robin start for picking a rank

	emitted  atomic.Int64 // tokens emitted over all requests (exit fault)
	inflight atomic.Int64 // Generate calls in progress

	mu       sync.Mutex
	pub      backend.EventPublisher
	started  bool
	running  bool // Start completed and Cleanup not called
	workerID uint64
	done     chan struct{} // closed by Cleanup
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	requests map[string]*inflightReq
	boot     *bootstrapServer  // a prefill engine's, when Config.BootstrapAddr is set
	loras    map[string]string // loaded LoRA adapters: name -> path
	loading  map[string]bool   // LoRA adapters being loaded
}

// inflightReq is a Generate call known to the engine, for Abort.
type inflightReq struct {
	rank *rank
	seqs []*sequence // one per choice
}

var (
	_ backend.Engine        = (*Engine)(nil)
	_ backend.KVEventSource = (*Engine)(nil)
	_ backend.Aborter       = (*Engine)(nil)
	_ backend.Quiescer      = (*Engine)(nil)
)

// New returns an Engine for cfg (zero fields filled with their defaults).
// It starts nothing.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	e := &Engine{cfg: cfg, done: make(chan struct{}), requests: make(map[string]*inflightReq),
		loras: map[string]string{}, loading: map[string]bool{}}
	for i := range cfg.DPSize {
		e.ranks = append(e.ranks, newRank(i, &e.cfg))
	}
	return e, nil
}

// KVEventSources returns the data-parallel ranks 0..DPSize-1.
func (e *Engine) KVEventSources() []int {
	out := make([]int, len(e.ranks))
	for i := range out {
		out[i] = i
	}
	return out
}

// SetEventPublisher sets where KV events and load metrics go; call it
// before Start. Without one nothing is published.
func (e *Engine) SetEventPublisher(p backend.EventPublisher) {
	e.mu.Lock()
	e.pub = p
	e.mu.Unlock()
}

// Start sleeps Config.StartupTime (returning early with ctx's error, or
// backend.ErrEngineShutdown after Cleanup), starts the scheduler loops
// and, for a prefill engine with Config.BootstrapAddr, the bootstrap
// server, and returns the engine's configuration (with the bootstrap
// server's port). workerID becomes the worker_id of published events and
// the prefill_worker_id of a prefill's disaggregated_params.
func (e *Engine) Start(ctx context.Context, workerID uint64) (backend.Config, error) {
	e.mu.Lock()
	if e.started {
		e.mu.Unlock()
		return backend.Config{}, ErrAlreadyStarted
	}
	e.started = true
	e.mu.Unlock()

	if d := e.cfg.StartupTime; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return backend.Config{}, fmt.Errorf("mocker: start: %w", context.Cause(ctx))
		case <-e.done:
			t.Stop()
			return backend.Config{}, fmt.Errorf("mocker: start: %w", backend.ErrEngineShutdown)
		}
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	select {
	case <-e.done:
		return backend.Config{}, fmt.Errorf("mocker: start: %w", backend.ErrEngineShutdown)
	default:
	}
	bootPort := 0
	if e.cfg.BootstrapAddr != "" {
		boot, err := listenBootstrap(e.cfg.BootstrapAddr, e.cfg.Logger)
		if err != nil {
			return backend.Config{}, err
		}
		e.boot, bootPort = boot, boot.port()
		e.wg.Go(boot.serve)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e.cancel, e.workerID, e.running = cancel, workerID, true
	if _, ok := e.pub.(KVBatchPublisher); ok {
		for _, r := range e.ranks {
			r.mu.Lock()
			r.kv.blockSize = e.cfg.BlockSize // keep stored blocks' token ids
			r.mu.Unlock()
		}
	}
	for _, r := range e.ranks {
		e.wg.Go(func() { r.run(runCtx, e.pub, workerID) })
	}
	e.cfg.Logger.Info("mocker: started", "worker_id", workerID, "dp_size", len(e.ranks),
		"mode", e.cfg.DisaggregationMode, "bootstrap_port", bootPort)
	return backend.Config{
		BootstrapPort:       bootPort,
		Model:               e.cfg.Model,
		ContextLength:       e.cfg.ContextLength,
		KVBlockSize:         e.cfg.BlockSize,
		TotalKVBlocks:       e.cfg.NumGPUBlocks,
		MaxNumSeqs:          e.cfg.MaxNumSeqs,
		MaxNumBatchedTokens: e.cfg.MaxNumBatchedTokens,
		DataParallelSize:    len(e.ranks),
	}, nil
}

// Cleanup stops the scheduler loops and the bootstrap server and waits
// for them (or for ctx).
// In-flight Generate calls return backend.ErrEngineShutdown. It is
// idempotent and safe without Start.
func (e *Engine) Cleanup(ctx context.Context) error {
	e.mu.Lock()
	select {
	case <-e.done:
	default:
		close(e.done)
	}
	e.running = false
	cancel, boot := e.cancel, e.boot
	e.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	var bootErr error
	if boot != nil {
		bootErr = boot.close()
	}
	stopped := make(chan struct{})
	go func() {
		e.wg.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
		return bootErr
	case <-ctx.Done():
		return fmt.Errorf("mocker: cleanup: %w", context.Cause(ctx))
	}
}

// Abort ends the request with the given id early (each of its choices
// finishes with FinishCancelled) and frees its blocks.
func (e *Engine) Abort(_ context.Context, requestID string) {
	e.mu.Lock()
	req := e.requests[requestID]
	e.mu.Unlock()
	if req == nil {
		return
	}
	for _, seq := range req.seqs {
		req.rank.remove(seq)
		seq.out.end(backend.FinishCancelled, "")
	}
}

// Stats is a snapshot of the engine's schedulers, summed over its ranks.
type Stats struct {
	// Running counts sequences being prefilled or decoded (one per
	// choice of a request).
	Running int
	// Waiting counts sequences queued for admission (new or preempted).
	Waiting int
	// ActiveBlocks counts KV blocks in use by sequences; TotalBlocks is
	// the capacity (NumGPUBlocks per rank).
	ActiveBlocks, TotalBlocks int
	// Preemptions counts sequences preempted since the engine started.
	Preemptions uint64
}

// Stats returns a snapshot of the schedulers. It is safe to call at any
// time, concurrently with requests.
func (e *Engine) Stats() Stats {
	var s Stats
	for _, r := range e.ranks {
		r.mu.Lock()
		s.Running += len(r.prefill)
		for _, q := range r.decode {
			if q.state == stDecode {
				s.Running++
			}
		}
		s.Waiting += len(r.waiting)
		s.ActiveBlocks += r.kv.activeBlocks()
		s.Preemptions += r.preemptions
		r.mu.Unlock()
		s.TotalBlocks += e.cfg.NumGPUBlocks
	}
	return s
}

// IsQuiescent reports whether no request is being served.
func (e *Engine) IsQuiescent() bool { return e.inflight.Load() == 0 }

// pickRank returns the rank a request runs on: req.Routing.DPRank when
// set, else the least loaded rank (ties broken round-robin).
func (e *Engine) pickRank(req *backend.Request) (*rank, error) {
	if req.Routing != nil && req.Routing.DPRank != nil {
		i := int(*req.Routing.DPRank)
		if i >= len(e.ranks) {
			return nil, fmt.Errorf("mocker: %w: dp_rank %d out of range [0, %d)", backend.ErrInvalidArgument, i, len(e.ranks))
		}
		return e.ranks[i], nil
	}
	start := int(e.next.Add(1) % uint64(len(e.ranks)))
	best := e.ranks[start]
	for k := 1; k < len(e.ranks); k++ {
		if r := e.ranks[(start+k)%len(e.ranks)]; r.load.Load() < best.load.Load() {
			best = r
		}
	}
	return best, nil
}
