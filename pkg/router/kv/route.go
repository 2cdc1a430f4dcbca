package kv

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// matcher finds how much of a prompt each worker holds: *Indexer (KV
// events) or *ApproxIndexer (no events).
type matcher interface {
	FindMatches(local []uint64) OverlapScores
}

// target sends a request to a chosen instance (the push router's typed
// stage, *router.Engine).
type target interface {
	Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error
	GenerateOn(ctx context.Context, id uint64, req *backend.Request, emit func(*backend.Output) error) error
	Available() []uint64
}

// RouterConfig configures a KV router for one model.
type RouterConfig struct {
	// BlockSize is the model's KV block size in tokens.
	BlockSize int
	// DPSize is the number of data-parallel ranks per worker (default 1).
	DPSize int
}

// RouterDeps are the router's parts.
type RouterDeps struct {
	Next      target
	Matcher   matcher
	Approx    *ApproxIndexer // set in approximate mode: routing decisions feed it
	Scheduler *Scheduler
	Sequences *Sequences
	Metrics   *RouterMetrics
	Logger    *slog.Logger
}

// Router is the KV-aware routing stage: for each request it hashes the
// prompt's blocks, asks the indexer which workers hold its prefix, lets
// the scheduler weigh that overlap against each worker's load, records the
// request's load on the chosen worker until it ends, and sends it there.
// A request pinned to an instance (nvext.backend_instance_id) bypasses
// the choice.
type Router struct {
	cfg RouterConfig
	d   RouterDeps
	log *slog.Logger

	mu      sync.Mutex
	tracked map[Worker]bool // workers the load tracker knows
}

// NewRouter returns a KV router.
func NewRouter(cfg RouterConfig, d RouterDeps) *Router {
	if cfg.DPSize <= 0 {
		cfg.DPSize = 1
	}
	log := d.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Router{cfg: cfg, d: d, log: log, tracked: map[Worker]bool{}}
}

// track makes sure the load tracker knows every candidate: a worker it
// does not know is costed without its overlap.
func (r *Router) track(candidates []Worker) {
	r.mu.Lock()
	defer r.mu.Unlock()
	added := false
	for _, w := range candidates {
		if !r.tracked[w] {
			r.tracked[w] = true
			added = true
		}
	}
	if added {
		all := make([]Worker, 0, len(r.tracked))
		for w := range r.tracked {
			all = append(all, w)
		}
		r.d.Sequences.UpdateWorkers(all)
	}
}

// RemoveWorker forgets a worker that left discovery: its tracked load, its
// cached blocks in approximate mode.
func (r *Router) RemoveWorker(id uint64) {
	r.mu.Lock()
	changed := false
	for w := range r.tracked {
		if w.ID == id {
			delete(r.tracked, w)
			changed = true
		}
	}
	all := make([]Worker, 0, len(r.tracked))
	for w := range r.tracked {
		all = append(all, w)
	}
	r.mu.Unlock()
	if changed {
		r.d.Sequences.UpdateWorkers(all)
	}
	if r.d.Approx != nil {
		r.d.Approx.RemoveWorker(id)
	}
}

// Decision is what the router chose for a request, for annotations.
type Decision struct {
	Worker        Worker
	OverlapBlocks uint32
	PromptBlocks  int
}

type decisionKey struct{}

type queryOnlyKey struct{}

// WithQueryOnly returns a context in which the router only decides: it
// fills the Decision (WithDecision) and returns without sending the
// request or recording its load (the query_instance_id annotation).
func WithQueryOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, queryOnlyKey{}, true)
}

// WithDecision returns a context whose KV routing decision is stored in
// *d once the router made it (for the query_instance_id annotation and
// nvext worker_id).
func WithDecision(ctx context.Context, d *Decision) context.Context {
	return context.WithValue(ctx, decisionKey{}, d)
}

// Generate routes req and streams the chosen worker's outputs to emit.
func (r *Router) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	if req.Routing != nil && req.Routing.BackendInstanceID != nil {
		if q, _ := ctx.Value(queryOnlyKey{}).(bool); q {
			if d, ok := ctx.Value(decisionKey{}).(*Decision); ok && d != nil {
				*d = Decision{Worker: Worker{ID: *req.Routing.BackendInstanceID}, PromptBlocks: len(req.TokenIDs) / max(1, r.cfg.BlockSize)}
			}
			return nil
		}
		return r.d.Next.Generate(ctx, req, emit)
	}
	start := time.Now()
	local := kvblock.LocalHashes(req.TokenIDs, r.cfg.BlockSize)
	hashed := time.Now()
	scores := r.d.Matcher.FindMatches(local)
	matched := time.Now()
	var candidates []Worker
	for _, id := range r.d.Next.Available() {
		for rank := 0; rank < r.cfg.DPSize; rank++ {
			candidates = append(candidates, Worker{ID: id, DPRank: uint32(rank)})
		}
	}
	r.track(candidates)
	tracking := TrackingHashes(kvblock.SeqHashes(local), true)
	seqHashed := time.Now()
	sel, err := r.d.Scheduler.Select(ScheduleRequest{
		Candidates: candidates, ISL: len(req.TokenIDs), Overlaps: scores,
		Loads: r.d.Sequences.Loads(tracking), Override: override(req.RouterConfigOverride),
	})
	if err != nil {
		if errors.Is(err, ErrNoWorkers) {
			// Let the push router give its usual "no instances" answer.
			return r.d.Next.Generate(ctx, req, emit)
		}
		return err
	}
	done := time.Now()
	r.d.Metrics.ObserveOverhead(Overhead{BlockHashing: hashed.Sub(start), FindMatches: matched.Sub(hashed),
		SeqHashing: seqHashed.Sub(matched), Scheduling: done.Sub(seqHashed), Total: done.Sub(start)})
	r.d.Metrics.ObserveSelection(sel)
	if d, ok := ctx.Value(decisionKey{}).(*Decision); ok && d != nil {
		*d = Decision{Worker: sel.Worker, OverlapBlocks: sel.OverlapBlocks, PromptBlocks: len(local)}
	}
	if q, _ := ctx.Value(queryOnlyKey{}).(bool); q {
		return nil
	}
	if r.d.Approx != nil {
		r.d.Approx.RecordRouting(sel.Worker, local)
	}

	id := requestID(ctx)
	expected := 0
	if req.StopConditions.MaxTokens != nil {
		expected = int(*req.StopConditions.MaxTokens)
	}
	if _, err := r.d.Sequences.Add(ActiveRequest{ID: id, Worker: sel.Worker, Hashes: tracking, ISL: len(req.TokenIDs),
		Overlap: sel.OverlapBlocks, ExpectedOutputTokens: expected}); err != nil {
		r.log.Warn("kv router: request not tracked", "request_id", id, "err", err)
	} else {
		defer r.d.Sequences.Free(id)
	}
	routed := *req
	rt := backend.Routing{}
	if req.Routing != nil {
		rt = *req.Routing
	}
	rank := sel.Worker.DPRank
	rt.DPRank = &rank
	routed.Routing = &rt
	first := true
	generated := 0
	bs := max(1, r.cfg.BlockSize)
	blocks := (len(req.TokenIDs) + bs - 1) / bs
	return r.d.Next.GenerateOn(ctx, sel.Worker.ID, &routed, func(out *backend.Output) error {
		if n := len(out.TokenIDs); n > 0 {
			if first {
				first = false
				r.d.Sequences.MarkPrefillCompleted(id)
			}
			generated += n
			// One more output block only when the sequence crosses a
			// block boundary (spec §4.1 step 5), not per token.
			if now := (len(req.TokenIDs) + generated + bs - 1) / bs; now > blocks {
				blocks = now
				r.d.Sequences.AddOutputBlock(id, generated)
			}
		}
		return emit(out)
	})
}

// requestID is the request's id, the key of its tracked load.
func requestID(ctx context.Context) string {
	if rc, ok := runtime.FromContext(ctx); ok {
		return rc.ID()
	}
	return ""
}

// override reads router_config_override.
func override(raw json.RawMessage) Override {
	var o Override
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &o)
	}
	return o
}
