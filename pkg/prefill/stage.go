package prefill

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

// Pool is a model's prefill workers, as the stage uses them.
type Pool interface {
	// Generate routes a prefill request to one of the pool's workers (by
	// KV cache, or by the frontend's simple policy) and streams its
	// outputs, each with its Placement; a request whose
	// Routing.BackendInstanceID is set goes to that worker.
	backend.Generator
	// Available returns the workers that can take a prefill now, sorted.
	Available() []uint64
	// Pick chooses a worker for req without sending it or booking its
	// load (the bootstrap handoff must know the worker before it sends).
	Pick(req *backend.Request) (*backend.Placement, error)
	// Bootstrap returns where worker id listens for the bootstrap
	// handoff (its card's disaggregated_endpoint); ok is false when it
	// does not, and its requests are handed over synchronously.
	Bootstrap(id uint64) (host string, port int, ok bool)
}

// Config configures the stage of one model.
type Config struct {
	// Model labels the metrics and log lines.
	Model string
	// Enforce fails requests that cannot be prefilled on a prefill worker
	// instead of prefilling them on the decode worker (--enforce-disagg).
	Enforce bool
	// Retries is how many times a prefill whose worker failed is tried on
	// another prefill worker (the model's migration limit).
	Retries int
	// Conditional configures conditional disaggregation (off by default).
	Conditional Conditional
	// BlockSize is the model's KV block size in tokens (conditional
	// disaggregation turns cached blocks into tokens).
	BlockSize int
	// DecodeOverrides sets the decode router's per-request overrides on
	// the decode half of a disaggregated request: no overlap scoring, no
	// KV reuse assumed (its KV cache comes from the prefill worker). Set
	// it when the decode router is KV-aware.
	DecodeOverrides bool
	// Metrics receives the decisions; nil records nothing.
	Metrics *Metrics
	// Logger receives the log lines; nil discards.
	Logger *slog.Logger
	// TracerProvider makes the prefill span of each disaggregated
	// request; nil makes none.
	TracerProvider trace.TracerProvider
}

// Stage is the prefill stage of one model's chain: it wraps the decode
// router. It is inactive until SetPool gives it prefill workers.
type Stage struct {
	next   backend.Generator
	decode decider // nil: no KV routing, overlap 0
	cfg    Config
	log    *slog.Logger
	tracer trace.Tracer
	pool   atomic.Pointer[poolRef]
}

// poolRef holds the current pool (an interface does not fit an
// atomic.Pointer).
type poolRef struct{ Pool }

var _ backend.Generator = (*Stage)(nil)

// New returns the stage in front of next, the decode router. decode, when
// not nil, answers which decode worker a request would go to and how much
// of its prompt that worker holds (the KV router: *kv.Router), for
// conditional disaggregation; pass nil without KV routing.
func New(next backend.Generator, decode decider, cfg Config) *Stage {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg.Conditional = cfg.Conditional.withDefaults()
	return &Stage{next: next, decode: decode, cfg: cfg, log: log, tracer: telemetry.Tracer(cfg.TracerProvider, "github.com/dynamo-go/dynamo/pkg/prefill")}
}

// SetPool attaches the model's prefill workers; nil detaches them (the
// last prefill worker left), and the stage passes requests on to the
// decode router again.
func (s *Stage) SetPool(p Pool) {
	if p == nil {
		s.pool.Store(nil)
		return
	}
	s.pool.Store(&poolRef{p})
}

// Active reports whether the model has a prefill worker available now.
func (s *Stage) Active() bool { return s.current() != nil }

// current returns the pool if it has an available worker.
func (s *Stage) current() Pool {
	ref := s.pool.Load()
	if ref == nil || len(ref.Available()) == 0 {
		return nil
	}
	return ref.Pool
}

// PickPrefill answers which prefill worker req would be prefilled on,
// sending nothing; ok is false when it would not be prefilled remotely
// (the query_instance_id annotation).
func (s *Stage) PickPrefill(req *backend.Request) (p *backend.Placement, ok bool) {
	pool := s.current()
	if pool == nil || s.local(req) {
		return nil, false
	}
	if rt := req.Routing; rt != nil && rt.PrefillWorkerID != nil {
		return &backend.Placement{WorkerID: *rt.PrefillWorkerID, DPRank: rt.PrefillDPRank}, true
	}
	p, err := pool.Pick(prefillRequest(req))
	return p, err == nil
}

// Generate prefills req on a prefill worker and decodes it on a decode
// worker, or passes it on to the decode router: while the model has no
// prefill worker, for a prompt the conditional policy keeps local, and
// for a request migration resumes after its decode worker failed (the
// new decode worker recomputes the prompt and the tokens so far).
func (s *Stage) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	if req.MigratedTokens > 0 {
		return s.next.Generate(telemetry.WithAttributes(ctx, attrDecision.String("resumed")), req, emit)
	}
	pool := s.current()
	if pool == nil {
		if s.cfg.Enforce {
			s.cfg.Metrics.decision(s.cfg.Model, DecisionRefused)
			return ErrNoPrefillWorkers
		}
		if s.pool.Load() != nil {
			s.cfg.Metrics.decision(s.cfg.Model, DecisionFallback)
			ctx = telemetry.WithAttributes(ctx, attrDecision.String(DecisionFallback))
		}
		return s.next.Generate(ctx, req, emit)
	}
	if s.local(req) {
		s.cfg.Metrics.decision(s.cfg.Model, DecisionLocal)
		return s.next.Generate(telemetry.WithAttributes(ctx, attrDecision.String(DecisionLocal)), req, emit)
	}
	parent, ok := runtime.FromContext(ctx)
	if !ok {
		return s.next.Generate(ctx, req, emit) // the router answers ErrNoRequestContext
	}
	h := &handoff{s: s, ctx: ctx, parent: parent, pool: pool, req: req, emit: emit}
	return h.run()
}

// Span attributes.
var (
	attrDecision = attribute.Key("prefill.decision")
	attrHandoff  = attribute.Key("prefill.handoff")
	attrWorker   = attribute.Key("prefill.worker_id")
	attrOutcome  = attribute.Key("prefill.outcome")
	attrAttempts = attribute.Key("prefill.attempts")
)

// Handoff styles (the prefill.handoff attribute).
const (
	handoffBootstrap = "bootstrap"
	handoffSync      = "sync"
)

// prefillRequest is req as a prefill worker gets it: one token of one
// choice (the decode half generates all n), no minimum, routed by the
// prefill router (or to the pinned prefill worker), without the decode
// half's fields.
func prefillRequest(req *backend.Request) *backend.Request {
	p := *req
	p.StopConditions.MaxTokens = backend.Ptr(uint32(1))
	p.SamplingOptions.N = nil
	p.StopConditions.MinTokens = nil
	p.PrefillResult, p.BootstrapInfo, p.MigrationLink, p.RouterConfigOverride = nil, nil, nil, nil
	rt := backend.Routing{}
	if req.Routing != nil {
		rt = *req.Routing
	}
	rt.BackendInstanceID, rt.DecodeWorkerID, rt.DPRank = rt.PrefillWorkerID, nil, rt.PrefillDPRank
	p.Routing = &rt
	return &p
}

// decodeRequest is req as the decode workers get it after a remote
// prefill: the original max_tokens, the pinned decode worker if any, and
// the decode router's overrides.
func (s *Stage) decodeRequest(req *backend.Request, prefill *backend.Placement) (*backend.Request, error) {
	d := *req
	rt := backend.Routing{}
	if req.Routing != nil {
		rt = *req.Routing
	}
	if rt.BackendInstanceID == nil {
		rt.BackendInstanceID = rt.DecodeWorkerID
	}
	if prefill != nil {
		rt.PrefillWorkerID, rt.PrefillDPRank = &prefill.WorkerID, prefill.DPRank
	}
	d.Routing = &rt
	if s.cfg.DecodeOverrides {
		o, err := withDecodeOverrides(req.RouterConfigOverride)
		if err != nil {
			return nil, err
		}
		d.RouterConfigOverride = o
	}
	return &d, nil
}

// withDecodeOverrides sets overlap_score_weight 0 and assume_kv_reuse
// false in a router_config_override, keeping its other fields.
func withDecodeOverrides(raw json.RawMessage) (json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("prefill: router_config_override: %w", err)
		}
	}
	m["overlap_score_weight"] = json.RawMessage("0")
	m["assume_kv_reuse"] = json.RawMessage("false")
	return json.Marshal(m)
}
