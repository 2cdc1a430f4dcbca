package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/hfhub"
	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

// Disaggregation modes of a worker.
const (
	ModeAggregated = "aggregated"
	ModePrefill    = "prefill"
	ModeDecode     = "decode"
)

// Config configures Run. Zero fields take the defaults in their
// comments.
type Config struct {
	// Endpoint is the endpoint to serve (default dyn://dynamo.backend.generate).
	Endpoint runtime.EndpointID
	// ModelPath is a local Hugging Face model directory or a hub id
	// (org/name), resolved through Hub, whose files make the model card.
	// Empty, or a GGUF file: the card is built from what the engine
	// reports (backend.Config.Native), which needs Processing to be
	// "engine" on both sides.
	ModelPath string
	// ModelName overrides the served model name the engine reports.
	ModelName string
	// Aliases are further names clients may use.
	Aliases []string
	// ModelTypes the frontend serves the model as: "chat",
	// "completions", "embedding" (default chat and completions). A
	// prefill worker's card has model type Prefill instead, whatever
	// this says.
	ModelTypes []string
	// MigrationLimit is published on the card: how many times a frontend
	// may re-issue a broken stream of this model on another worker.
	MigrationLimit int
	// DisaggregationMode is the worker's role in disaggregated serving:
	// aggregated (default; prefill and decode in one engine), prefill
	// (its card's model type is Prefill, under the same model name, and
	// carries the engine's bootstrap endpoint, if any, as
	// disaggregated_endpoint) or decode (the card is the aggregated one
	// with worker type Decode; the engine's KV events are not published
	// and no local KV index is served: the prefill workers own the cache
	// routers care about). Load metrics are published in every mode.
	DisaggregationMode string
	// ToolCallParser and ReasoningParser name the output parsers the
	// frontend applies to this model's text (--dyn-tool-call-parser,
	// --dyn-reasoning-parser), published in the card's runtime config;
	// "" for none. The binary checks the names.
	ToolCallParser  string
	ReasoningParser string
	// Processing is published in the card's runtime config: who renders
	// and tokenizes chat prompts (preprocessing "engine": the engine must
	// be a backend.ChatTokenizer, served on backend.TokenizeEndpoint) and
	// who detokenizes (postprocessing "worker" or "engine": the engine's
	// outputs carry Text). Zero: the frontend does both.
	Processing modelcard.Processing
	// ChatTemplateFile is a Jinja chat template file that replaces the
	// model's own (--custom-jinja-template); "" keeps the model's.
	ChatTemplateFile string
	// ValidateStreams wraps every engine stream in backend.ValidateStream (tests,
	// debug builds): a contract violation fails the request loudly.
	ValidateStreams bool
	// Hub resolves ModelPath and hf:// adapter sources (HF_HOME,
	// HF_TOKEN, ...).
	Hub hfhub.Config
	// Loras are LoRA adapters to load at start (--lora-adapters), once
	// the engine has started and before the model card is published; a
	// failure ends Run with the reason. More are loaded at run time
	// through the lora endpoint (modelcard.LoraEndpoint). The engine must
	// be a backend.LoraEngine.
	Loras []LoraAdapter
	// MaxLoras (--max-loras) bounds the adapters active in the engine at
	// once; the worker may hold more, and a request for a held adapter
	// that is not active first unloads the least recently used one with
	// no request in flight (a swap). Zero: no limit.
	MaxLoras int
	// Canary configures the endpoint's health checks (off by default).
	Canary CanaryConfig
	// Logger receives the worker's log lines (nil: discard).
	Logger *slog.Logger
	// TracerProvider makes each request's engine.generate span (a child
	// of the runtime's handling span); nil makes none.
	TracerProvider trace.TracerProvider
}

// CanaryConfig configures the canary health checks of the served endpoint
// (the reference system's, spec/runtime.md §5.3). When the endpoint has
// sent no output for WaitTime, the worker sends a canary request to the
// engine, in-process; if the engine answers with an error, ends the
// stream without output, or sends nothing within RequestTimeout, the
// endpoint leaves discovery (routers stop sending it requests) and the
// status server reports it notready, until a later canary passes. While
// unhealthy, a canary goes every WaitTime.
type CanaryConfig struct {
	// Enabled turns the health checks on (DYN_HEALTH_CHECK_ENABLED).
	Enabled bool
	// WaitTime is the idle time before a canary, and the time between
	// canaries while the endpoint is unhealthy (DYN_CANARY_WAIT_TIME;
	// default 10 s).
	WaitTime time.Duration
	// RequestTimeout bounds the wait for a canary's first output
	// (DYN_HEALTH_CHECK_REQUEST_TIMEOUT; default 3 s).
	RequestTimeout time.Duration
	// Payload is the canary request (DYN_HEALTH_CHECK_PAYLOAD). nil: the
	// engine's (backend.HealthChecker), else prompt ids [1 2 3] with
	// max_tokens 1. The worker sends a copy with HealthCheck set, and the
	// served model name when Model is empty.
	Payload *backend.Request
	// ProbeInterval is how often an engine that is a
	// backend.HealthProber is asked whether it is healthy, busy or idle,
	// with the canaries on or off (DYN_HEALTH_CHECK_PROBE_INTERVAL;
	// default 5 s); each call is bounded by RequestTimeout. A failure takes
	// the endpoint out of routing until a probe passes (and, with the
	// canaries on, a canary).
	ProbeInterval time.Duration
}

func (c Config) withDefaults() Config {
	if c.Endpoint == (runtime.EndpointID{}) {
		c.Endpoint = runtime.EndpointID{Namespace: "dynamo", Component: "backend", Name: "generate"}
	}
	if len(c.ModelTypes) == 0 {
		c.ModelTypes = []string{"chat", "completions"}
	}
	if c.DisaggregationMode == "" {
		c.DisaggregationMode = ModeAggregated
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Canary.WaitTime == 0 {
		c.Canary.WaitTime = 10 * time.Second
	}
	if c.Canary.RequestTimeout == 0 {
		c.Canary.RequestTimeout = 3 * time.Second
	}
	if c.Canary.ProbeInterval == 0 {
		c.Canary.ProbeInterval = 5 * time.Second
	}
	return c
}

// Validate reports the first invalid setting.
func (c Config) Validate() error {
	switch c.DisaggregationMode {
	case "", ModeAggregated, ModePrefill, ModeDecode:
	default:
		return fmt.Errorf("worker: disaggregation mode %q: want aggregated, prefill or decode", c.DisaggregationMode)
	}
	if c.MigrationLimit < 0 {
		return fmt.Errorf("worker: migration limit %d must not be negative", c.MigrationLimit)
	}
	for _, t := range c.ModelTypes {
		if t != "chat" && t != "completions" && t != "embedding" {
			return fmt.Errorf("worker: model type %q: want chat, completions or embedding", t)
		}
	}
	if c.Canary.WaitTime < 0 || c.Canary.RequestTimeout < 0 || c.Canary.ProbeInterval < 0 {
		return fmt.Errorf("worker: canary wait time %s, request timeout %s and probe interval %s must not be negative",
			c.Canary.WaitTime, c.Canary.RequestTimeout, c.Canary.ProbeInterval)
	}
	if p := c.Canary.Payload; p != nil && len(p.TokenIDs) == 0 {
		return errors.New("worker: the canary payload has no token_ids (want a backend request: token_ids, stop_conditions, ...)")
	}
	if err := c.Processing.Validate(); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	if c.MaxLoras < 0 {
		return fmt.Errorf("worker: max LoRAs %d must not be negative (0: no limit)", c.MaxLoras)
	}
	seen := map[string]bool{}
	for _, a := range c.Loras {
		if !modelcard.ValidLoraName(a.Name) {
			return fmt.Errorf("worker: LoRA adapter name %q: want 1 to 128 bytes without '/' or white space", a.Name)
		}
		if seen[a.Name] {
			return fmt.Errorf("worker: LoRA adapter %q is given twice", a.Name)
		}
		seen[a.Name] = true
		if err := ParseLoraSource(a.Source); err != nil {
			return fmt.Errorf("worker: LoRA adapter %q: %w", a.Name, err)
		}
	}
	if c.Endpoint != (runtime.EndpointID{}) {
		return c.Endpoint.Validate()
	}
	return nil
}

// ErrStartFailed wraps the error of an engine whose Start failed.
var ErrStartFailed = errors.New("worker: engine start failed")

// Run serves engine as a worker of rt until ctx ends, then shuts down in
// order. The steps:
//
//  1. give a backend.KVEventSource its event publisher;
//  2. Start the engine (on failure: Cleanup, return ErrStartFailed);
//  3. let a backend.MetricsSource register its metrics;
//  4. serve the model files on the files endpoint (modelcard.FilesEndpoint);
//     with preprocessing "engine" (Config.Processing), serve the engine's
//     chat tokenization on backend.TokenizeEndpoint;
//  5. load Config.Loras, publishing each adapter's card (a failure ends
//     Run), serve the lora endpoint (modelcard.LoraEndpoint), then publish
//     the model card (v1/mdc/..., bound to the lease), which names the
//     files by checksum;
//  6. serve the endpoint: each request is decoded, handed to Generate,
//     and its outputs streamed back; a stopped or killed request is
//     reported to a backend.Aborter once; with Config.Canary enabled, an
//     idle endpoint's engine gets canary requests, and the endpoint is out
//     of discovery while it fails them;
//  7. when ctx ends: remove the cards; the runtime unregisters the
//     instance, keeps taking requests for the grace period, refuses new
//     ones and drains in-flight ones; then Cleanup, once.
//
// Run returns nil after a clean shutdown. rt must be running (rt.Run).
func Run(ctx context.Context, rt *runtime.DistributedRuntime, engine backend.Engine, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	w := &server{rt: rt, engine: engine, cfg: cfg, log: cfg.Logger,
		tracer: telemetry.Tracer(cfg.TracerProvider, "github.com/dynamo-go/dynamo/pkg/backend/worker")}
	return w.run(ctx)
}

// server serves one engine on one endpoint for Run.
type server struct {
	rt     *runtime.DistributedRuntime
	engine backend.Engine
	cfg    Config
	log    *slog.Logger
	tracer trace.Tracer
	canary *canary // nil unless Config.Canary.Enabled or the engine is a backend.HealthProber
	loras  *loras  // the LoRA adapters held
}

func (w *server) run(ctx context.Context) (err error) {
	cleaned := false
	cleanup := func() {
		if cleaned {
			return
		}
		cleaned = true
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		if cerr := w.engine.Cleanup(cctx); cerr != nil {
			w.log.Error("worker: engine cleanup failed", "err", cerr)
			err = errors.Join(err, fmt.Errorf("worker: cleanup: %w", cerr))
		}
		w.log.Info("worker: engine cleaned up", "took", time.Since(start))
	}
	defer cleanup()

	var local map[int]*kvblock.LocalIndex
	if src, ok := w.engine.(backend.KVEventSource); ok {
		pub := newEventPublisher(w.rt, w.cfg.Endpoint, w.log)
		if w.cfg.DisaggregationMode == ModeDecode {
			pub.dropKV = true
		} else {
			local = map[int]*kvblock.LocalIndex{}
			for _, r := range src.KVEventSources() {
				local[r] = kvblock.NewLocalIndex(w.rt.InstanceID(), uint32(r))
			}
		}
		pub.local = local
		src.SetEventPublisher(pub)
	}
	started := time.Now()
	ecfg, err := w.engine.Start(ctx, w.rt.InstanceID())
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStartFailed, err)
	}
	if ecfg.Model == "" {
		return fmt.Errorf("%w: the engine reported no model name", ErrStartFailed)
	}
	if w.cfg.ModelName != "" {
		ecfg.ServedModelName = w.cfg.ModelName
	}
	ecfg.Aliases = append(ecfg.Aliases, w.cfg.Aliases...)
	w.log.Info("worker: engine started", "model", ecfg.Name(), "took", time.Since(started))

	if ms, ok := w.engine.(backend.MetricsSource); ok {
		if _, err := ms.SetupMetrics(backend.MetricsContext{
			Model: ecfg.Name(), Namespace: w.cfg.Endpoint.Namespace, Component: w.cfg.Endpoint.Component,
			Endpoint: w.cfg.Endpoint.Name, Registerer: w.rt.Registry(),
		}); err != nil {
			return fmt.Errorf("worker: engine metrics: %w", err)
		}
	}

	if _, prober := w.engine.(backend.HealthProber); w.cfg.Canary.Enabled || prober {
		if w.canary, err = w.newCanary(ecfg); err != nil {
			return err
		}
	}

	card, err := w.buildCard(ctx, ecfg)
	if err != nil {
		return err
	}
	serveCtx, stopServing := context.WithCancel(context.Background())
	files := make(chan error, 1)
	go func() { files <- newFileServer(card).serve(serveCtx, w.rt, w.cfg.Endpoint) }()
	defer func() {
		stopServing()
		if ferr := <-files; ferr != nil && err == nil {
			err = fmt.Errorf("worker: files endpoint: %w", ferr)
		}
	}()
	stopTokenize, err := w.serveTokenize(serveCtx)
	if err != nil {
		return err
	}
	defer stopTokenize()
	lm, err := newLoraMetrics(w.rt.Registry(), w.cfg.Endpoint)
	if err != nil {
		return err
	}
	w.loras = newLoras(w.engine, w.cfg.MaxLoras, loraCards{w: w, base: card}, w.log, lm)
	withdrawLoras := func() {
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.loras.withdrawAll(dctx)
	}
	for _, a := range w.cfg.Loras {
		if err := w.loras.load(ctx, a.Name, a.Source); err != nil {
			withdrawLoras()
			return fmt.Errorf("worker: --lora-adapters %s=%s: %w", a.Name, a.Source, err)
		}
	}
	stopLoras := w.serveLoras(serveCtx)
	defer stopLoras()
	cardKey, err := w.publishCard(ctx, card)
	if err != nil {
		withdrawLoras()
		return err
	}
	watcherDone := make(chan struct{})
	defer func() { stopServing(); <-watcherDone }()
	go func() {
		defer close(watcherDone)
		select {
		case <-ctx.Done():
		case <-serveCtx.Done():
			return
		}
		// Leave discovery first: the cards, then (in Serve) the instance.
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.loras.withdrawAll(dctx)
		if err := w.rt.Store().Delete(dctx, cardKey); err != nil {
			w.log.Warn("worker: removing the model card failed; it expires with the lease", "err", err)
		}
		stopServing()
	}()
	w.log.Info("worker: serving", "endpoint", w.cfg.Endpoint.String(), "model", ecfg.Name())
	queries := w.serveLocalIndexes(serveCtx, local)
	canaryDone := make(chan struct{})
	go func() {
		defer close(canaryDone)
		if w.canary != nil {
			w.canary.Run(serveCtx)
		}
	}()
	err = w.rt.Endpoint(w.cfg.Endpoint).Serve(serveCtx, runtime.HandlerFunc(w.handle))
	stopServing()
	<-canaryDone
	if qerr := queries(); qerr != nil && err == nil {
		err = qerr
	}
	if err != nil {
		return fmt.Errorf("worker: serve %s: %w", w.cfg.Endpoint, err)
	}
	return nil
}
