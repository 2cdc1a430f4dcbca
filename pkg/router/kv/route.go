package kv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/dynamo-go/dynamo/pkg/router"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

// matcher finds how much of a prompt each worker holds: *indexer (KV
// events) or *approxIndexer (no events).
type matcher interface {
	FindMatchesInto(m *matches, local []uint64)
}

// Pusher sends a request to an instance the router chose: the push
// router (*router.PushRouter), or a view of it that narrows Available (the
// pipeline's admission stage). GenerateOn sends to the chosen instance;
// Generate is used for requests pinned to an instance and when no worker
// is available (for its usual answer); Available lists the instances the
// router may choose from.
type Pusher interface {
	backend.Generator
	GenerateOn(ctx context.Context, id uint64, req *backend.Request, emit func(*backend.Output) error) error
	Available() []uint64
}

// routeConfig configures a KV router for one model.
type routeConfig struct {
	// BlockSize is the model's KV block size in tokens.
	BlockSize int
	// DPSize is the number of data-parallel ranks per worker (default 1).
	DPSize int
}

// routeDeps are the router's parts.
type routeDeps struct {
	Next      Pusher
	Matcher   matcher
	Approx    *approxIndexer // set in approximate mode: routing decisions feed it
	scheduler *Scheduler
	sequences *Sequences
	Metrics   *routerMetrics
	Logger    *slog.Logger
}

// routeStage is the KV-aware routing stage inside a Router: for each request it hashes the
// prompt's blocks, asks the indexer which workers hold its prefix, lets
// the scheduler weigh that overlap against each worker's load, records the
// request's load on the chosen worker until it ends, and sends it there.
// A request pinned to an instance (nvext.backend_instance_id) bypasses
// the choice. Decide answers where a request would go without sending it.
type routeStage struct {
	cfg routeConfig
	d   routeDeps
	log *slog.Logger

	mu      sync.Mutex
	tracked map[Worker]bool // workers the load tracker knows

	matches sync.Pool // *Matches, reused so that matching allocates nothing
}

// newRouteStage returns a KV router.
func newRouteStage(cfg routeConfig, d routeDeps) *routeStage {
	if cfg.DPSize <= 0 {
		cfg.DPSize = 1
	}
	log := d.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &routeStage{cfg: cfg, d: d, log: log, tracked: map[Worker]bool{}}
}

var _ backend.Generator = (*routeStage)(nil)

// track makes sure the load tracker knows every candidate: a worker it
// does not know is costed without its overlap.
func (r *routeStage) track(candidates []Worker) {
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
		r.d.sequences.UpdateWorkers(all)
	}
}

// RemoveWorker forgets a worker that left discovery: its tracked load, its
// cached blocks in approximate mode.
func (r *routeStage) RemoveWorker(id uint64) {
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
		r.d.sequences.UpdateWorkers(all)
	}
	if r.d.Approx != nil {
		r.d.Approx.RemoveWorker(id)
	}
}

// choice is the router's decision for one request and what it was
// based on.
type choice struct {
	sel      selection
	local    []uint64 // the prompt's block hashes
	tracking []uint64 // the hashes Sequences tracks for it
}

// placement is the choice as the response reports it.
func (c *choice) placement() *backend.Placement {
	rank, overlap, blocks := c.sel.Worker.DPRank, c.sel.OverlapBlocks, len(c.local)
	return &backend.Placement{WorkerID: c.sel.Worker.ID, DPRank: &rank, OverlapBlocks: &overlap, PromptBlocks: &blocks}
}

// choose hashes req's prompt into blocks, finds the workers' cached
// overlap and load, and lets the scheduler pick a worker. It changes no
// load or cache state.
func (r *routeStage) choose(req *backend.Request) (*choice, error) {
	start := time.Now()
	local := kvblock.LocalHashesSeed(req.TokenIDs, r.cfg.BlockSize, blockSeed(req))
	hashed := time.Now()
	scores, _ := r.matches.Get().(*matches)
	if scores == nil {
		scores = new(matches)
	}
	defer func() {
		scores.release()
		r.matches.Put(scores)
	}()
	r.d.Matcher.FindMatchesInto(scores, local)
	matched := time.Now()
	var candidates []Worker
	for _, id := range r.d.Next.Available() {
		for rank := 0; rank < r.cfg.DPSize; rank++ {
			candidates = append(candidates, Worker{ID: id, DPRank: uint32(rank)})
		}
	}
	r.track(candidates)
	o := override(req.RouterConfigOverride)
	tracking := trackingHashes(kvblock.SeqHashes(local), o.AssumeKVReuse == nil || *o.AssumeKVReuse)
	seqHashed := time.Now()
	sel, err := r.d.scheduler.Select(scheduleRequest{
		Candidates: candidates, ISL: len(req.TokenIDs), Overlaps: scores,
		Loads: r.d.sequences.Loads(tracking), Override: o,
	})
	if err != nil {
		return nil, err
	}
	done := time.Now()
	r.d.Metrics.ObserveOverhead(overhead{BlockHashing: hashed.Sub(start), FindMatches: matched.Sub(hashed),
		SeqHashing: seqHashed.Sub(matched), Scheduling: done.Sub(seqHashed), Total: done.Sub(start)})
	r.d.Metrics.ObserveSelection(sel)
	return &choice{sel: sel, local: local, tracking: tracking}, nil
}

// Decide answers where req would be routed now, without sending it or
// recording its load (the query_instance_id annotation). A pinned request
// goes to its instance.
func (r *routeStage) Decide(req *backend.Request) (*backend.Placement, error) {
	if req.Routing != nil && req.Routing.BackendInstanceID != nil {
		blocks := len(req.TokenIDs) / max(1, r.cfg.BlockSize)
		return &backend.Placement{WorkerID: *req.Routing.BackendInstanceID, PromptBlocks: &blocks}, nil
	}
	c, err := r.choose(req)
	if errors.Is(err, errNoWorkers) {
		return nil, fmt.Errorf("%w: %w", router.ErrNoInstances, err)
	}
	if err != nil {
		return nil, err
	}
	return c.placement(), nil
}

// Generate routes req and streams the chosen worker's outputs to emit,
// each with the decision's Placement. The request's load counts against
// the worker until its stream ends.
func (r *routeStage) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	if req.Routing != nil && req.Routing.BackendInstanceID != nil {
		return r.d.Next.Generate(ctx, req, emit)
	}
	c, err := r.choose(req)
	if errors.Is(err, errNoWorkers) {
		// Let the push router give its usual "no instances" answer.
		return r.d.Next.Generate(ctx, req, emit)
	}
	if err != nil {
		return err
	}
	if r.d.Approx != nil {
		r.d.Approx.RecordRouting(c.sel.Worker, c.local)
	}
	id := requestID(ctx)
	expected := 0
	if req.StopConditions.MaxTokens != nil {
		expected = int(*req.StopConditions.MaxTokens)
	}
	if _, err := r.d.sequences.Add(activeRequest{ID: id, Worker: c.sel.Worker, Hashes: c.tracking, ISL: len(req.TokenIDs),
		Overlap: c.sel.OverlapBlocks, ExpectedOutputTokens: expected}); err != nil {
		r.log.WarnContext(ctx, "kv router: request not tracked", "request_id", id, "err", err)
	} else {
		defer r.d.sequences.Free(id)
	}
	routed := *req
	rt := backend.Routing{}
	if req.Routing != nil {
		rt = *req.Routing
	}
	rank := c.sel.Worker.DPRank
	rt.DPRank = &rank
	routed.Routing = &rt
	placement := c.placement()
	first := true
	generated := 0
	bs := max(1, r.cfg.BlockSize)
	blocks := (len(req.TokenIDs) + bs - 1) / bs
	ctx = telemetry.WithAttributes(ctx, attribute.String("router.policy", "kv"),
		attribute.Int("kv.overlap_blocks", int(c.sel.OverlapBlocks)), attribute.Int("kv.prompt_blocks", blocks),
		attribute.Int("worker.dp_rank", int(rank)))
	return r.d.Next.GenerateOn(ctx, c.sel.Worker.ID, &routed, func(out *backend.Output) error {
		if n := len(out.TokenIDs); n > 0 {
			if first {
				first = false
				r.d.sequences.MarkPrefillCompleted(id)
			}
			generated += n
			// One more output block only when the sequence crosses a
			// block boundary (spec §4.1 step 5), not per token.
			if now := (len(req.TokenIDs) + generated + bs - 1) / bs; now > blocks {
				blocks = now
				r.d.sequences.AddOutputBlock(id, generated)
			}
		}
		out.Placement = placement
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
func override(raw json.RawMessage) configOverride {
	var o configOverride
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &o)
	}
	return o
}

// blockSeed is the seed of req's block hashes: a LoRA adapter's blocks
// are salted with its name, as the workers hash them in their KV events,
// so that a prefix cached for one adapter (or for the base model) never
// matches another's.
func blockSeed(req *backend.Request) uint64 {
	if rt := req.Routing; rt != nil && rt.LoraName != nil && *rt.LoraName != "" {
		return kvblock.SaltedSeed(*rt.LoraName, "")
	}
	return kvblock.Seed
}
