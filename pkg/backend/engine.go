package backend

import (
	"context"
)

// Generator is the contract every stage of a request's way shares, on both
// sides of the network: it turns one request into a stream of outputs.
// The frontend's stages (the migration stage, the KV router, the push
// router) implement it and each wraps the next, the way net/http
// middleware wraps an http.Handler; an Engine's Generate has the same
// shape, so an engine can stand at the end of a chain.
//
// The stream contract is Engine.Generate's: zero or more outputs without a
// finish reason, then exactly one terminal output, or an error. An error
// returned before anything was emitted means the request could not start;
// an error from emit stops the stream and is returned. ctx carries the
// request's runtime.Context (cancellation, stop and kill, the request id)
// and deadlines; results travel on the outputs, never in ctx.
//
// The Output passed to emit is the generator's until emit returns: it may
// fill the same struct with the next output (the push router does, to
// spare an allocation per token). What its fields refer to (slices,
// strings, pointed-to values) is never reused. A consumer that keeps an
// output past emit keeps a copy of the struct.
type Generator interface {
	Generate(ctx context.Context, req *Request, emit func(*Output) error) error
}

// GeneratorFunc adapts a function to a Generator.
type GeneratorFunc func(ctx context.Context, req *Request, emit func(*Output) error) error

// Generate calls f.
func (f GeneratorFunc) Generate(ctx context.Context, req *Request, emit func(*Output) error) error {
	return f(ctx, req, emit)
}

// Engine is what an engine author implements: a model server that turns
// token ids into token ids. The worker (package backend/worker) calls
// Start once, Generate once per request (concurrently), and Cleanup once
// at shutdown. An Engine is a Generator.
type Engine interface {
	// Start loads the model and returns its configuration. It may take
	// minutes; Generate must work once it returned. workerID is the
	// runtime's instance id (the discovery lease id).
	Start(ctx context.Context, workerID uint64) (Config, error)
	// Generate streams the outputs of one request to emit. ctx is the
	// request's context: Done means killed (stop at once); Stopped(ctx)
	// means stop gracefully, ending with a FinishCancelled output.
	//
	// The stream contract: zero or more outputs without a finish reason,
	// then exactly one terminal output (with a finish reason) and nothing
	// after it; or an error. An error returned before anything was
	// emitted means the request could not start. If emit returns an
	// error, stop and return it.
	Generate(ctx context.Context, req *Request, emit func(*Output) error) error
	// Cleanup releases everything. It is called once at shutdown, must be
	// idempotent, and must work even if Start never ran or failed.
	Cleanup(ctx context.Context) error
}

// Config is what an engine reports from Start (the reference system's
// EngineConfig). Zero fields are not advertised.
type Config struct {
	// Model is the model's name or path; required.
	Model string
	// ServedModelName is the name clients use (default: Model).
	ServedModelName string
	// Aliases are further names clients may use.
	Aliases []string
	// ContextLength is the maximum sequence length (prompt + output).
	ContextLength int
	// KVBlockSize is the number of tokens per KV-cache block.
	KVBlockSize int
	// TotalKVBlocks is the KV-cache capacity in blocks, per rank.
	TotalKVBlocks int
	// MaxNumSeqs caps concurrently running sequences, per rank.
	MaxNumSeqs int
	// MaxNumBatchedTokens caps tokens per forward pass, per rank.
	MaxNumBatchedTokens int
	// DataParallelSize is the number of data-parallel ranks (default 1).
	DataParallelSize int
	// DataParallelStartRank is the first rank this worker serves.
	DataParallelStartRank int
	// BootstrapPort is the port a prefill engine listens on for the
	// bootstrap handoff of disaggregated serving (see BootstrapInfo); 0:
	// it does not, and the frontend hands its requests over
	// synchronously. The worker publishes it in its model card's
	// disaggregated_endpoint.
	BootstrapPort int
	// BootstrapHost is the host decode engines connect to for the
	// bootstrap handoff; "": the runtime's advertised TCP host.
	BootstrapHost string
	// Native is what an engine that renders, tokenizes and detokenizes
	// by itself reports about its model (llama.cpp's /props), from which
	// a worker without the model's Hugging Face files builds its card;
	// nil when the engine reports nothing of the kind.
	Native *NativeModel
}

// NativeModel is what an engine reports about the model it serves, for a
// model card without the model's files (both processing sides in the
// engine).
type NativeModel struct {
	// ChatTemplate is the engine's default chat template ("" none).
	ChatTemplate string
	// BOSToken and EOSToken are the model's special token strings.
	BOSToken, EOSToken string
	// EOSTokenIDs are the ids that end generation.
	EOSTokenIDs []uint32
	// VocabSize is the number of tokens of the model's vocabulary (0
	// unknown).
	VocabSize int
}

// Name returns the served model name: ServedModelName, else Model.
func (c Config) Name() string {
	if c.ServedModelName != "" {
		return c.ServedModelName
	}
	return c.Model
}

// Optional capabilities. The worker and the conformance kit find them by
// type assertion.

// Aborter is told when a request is stopped or killed, so the engine can
// free its resources early. Abort is called at most once per request.
type Aborter interface {
	Abort(ctx context.Context, requestID string)
}

// Quiescer reports whether the engine has no work left (used while
// draining a prefill worker at shutdown).
type Quiescer interface {
	IsQuiescent() bool
}

// EventPublisher carries an engine's events to routers: KV-cache events
// (kvblock.RouterEvent for the mocker) and per-pass load metrics. Both must
// encode to JSON. The worker provides it; it is safe for concurrent use.
type EventPublisher interface {
	PublishKVEvent(ctx context.Context, dpRank int, event any) error
	PublishLoad(ctx context.Context, dpRank int, metrics any) error
}

// KVEventSource is an engine that publishes KV-cache events and load
// metrics for KV-aware routing. KVEventSources returns the data-parallel
// ranks that publish, in a stable order (calling it twice gives the same
// list). SetEventPublisher is called once, before Start.
type KVEventSource interface {
	KVEventSources() []int
	SetEventPublisher(p EventPublisher)
}

// MetricsSource is an engine that exports its own metrics. SetupMetrics is
// called once after Start; the ranks it returns must be stable.
type MetricsSource interface {
	SetupMetrics(m MetricsContext) (dpRanks []int, err error)
}

// HealthChecker supplies the canary request the worker sends to an idle
// engine, when health checks are enabled, to check it still answers: a
// small, cheap request (a few prompt ids, max_tokens 1). The worker sends
// a copy with Request.HealthCheck set; without a HealthChecker it sends a
// default one. The endpoint is healthy while the first output of the
// canary comes within the timeout and is not an error.
type HealthChecker interface {
	HealthCheckRequest() *Request
}

// LoraEngine is an Engine that applies LoRA adapters to requests: a
// request for adapter name carries Routing.LoraName = name. The worker
// (pkg/backend/worker) resolves an adapter's source to a local path,
// loads it with LoadLora before it publishes the adapter's card, and
// unloads it with UnloadLora (also to make room under --max-loras). An
// engine that cannot load adapters at run time (llama.cpp: adapters are
// given at its start) accepts only those it has, and refuses others with
// an error that says so.
type LoraEngine interface {
	// LoadLora makes adapter name, whose files are at path, servable. It
	// is called once per name until UnloadLora.
	LoadLora(ctx context.Context, name, path string) error
	// UnloadLora releases adapter name.
	UnloadLora(ctx context.Context, name string) error
}
