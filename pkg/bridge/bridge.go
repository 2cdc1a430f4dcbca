package bridge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

// The dialects New accepts.
const (
	DialectVLLM     = "vllm"
	DialectSGLang   = "sglang"
	DialectLlamaCpp = "llamacpp"
)

// Errors of New and Start.
var (
	// ErrInvalidConfig is wrapped by New's error for a bad Config.
	ErrInvalidConfig = errors.New("bridge: invalid config")
	// ErrNotReady is wrapped by Start's error when the engine did not
	// become ready within Config.StartTimeout.
	ErrNotReady = errors.New("bridge: engine not ready")
	// ErrModelMismatch is wrapped by Start's error when the engine serves
	// another model than Config.Model.
	ErrModelMismatch = errors.New("bridge: model mismatch")
	// ErrNotStarted is wrapped by Generate's error before Start succeeded.
	ErrNotStarted = errors.New("bridge: engine not started")
)

// DefaultStartTimeout is Config.StartTimeout's default: loading a large
// model can take minutes.
const DefaultStartTimeout = 10 * time.Minute

// idleConnTimeout is how long the Engine's own client keeps an idle
// connection: under the 5 s after which llama-server and uvicorn (vLLM,
// SGLang) close one.
const idleConnTimeout = 4 * time.Second

// Config configures an Engine.
type Config struct {
	// Dialect is the engine's HTTP API: "vllm", "sglang" or "llamacpp".
	Dialect string
	// URL is the engine server's base URL, e.g. http://127.0.0.1:8000.
	URL string
	// Models are the names the engine may serve the model by (cmd/worker:
	// --engine-model, else --model-name and --model-path): the engine
	// must serve one of them, under its served name or its model path,
	// exactly or by a path's last element (/models/Qwen3-0.6B serves
	// Qwen3-0.6B and org/Qwen3-0.6B). Empty accepts what it serves. A
	// mismatch fails Start with ErrModelMismatch, unless the Vocabulary
	// check ran and passed (then it is logged).
	Models []string
	// VLLMAPI is how a vLLM engine is driven: VLLMAPIAuto (""), its
	// token-in/token-out endpoint when it streams it, else completions;
	// VLLMAPIGenerate; VLLMAPICompletions. Other dialects ignore it.
	VLLMAPI string
	// EngineText asks the engine for its own detokenized text: every
	// output carries it in Output.Text, beside the token ids (the card's
	// postprocessing "engine"): vLLM's and SGLang's text, llama.cpp's
	// content.
	EngineText bool
	// Name is the public name the model is served by (cmd/worker:
	// --model-name, else the name derived from --model-path): Start
	// reports it as backend.Config.Model whatever name the engine serves
	// the model by, which is only matched against Models (and sent in the
	// engine's requests), never adopted. "" serves the engine's name (a
	// worker with neither flag).
	Name string
	// Vocabulary, when set, is the card's tokenizer: Start tokenizes a
	// probe text with it and with the engine's own tokenizer (vLLM's and
	// llama.cpp's /tokenize) and fails with ErrVocabMismatch when the ids
	// differ. When the vocabularies agree, a served name that is none of
	// Models is logged, not fatal. An engine that cannot tokenize text
	// (SGLang) is not checked, and Models decides.
	Vocabulary *Vocabulary
	// ContextLength is the maximum prompt+output length; 0 reads it from
	// the engine (vLLM /v1/models max_model_len; SGLang /v1/models or
	// /server_info context_length; llama.cpp /props n_ctx).
	ContextLength int
	// KVBlockSize is the engine's KV-cache block size, for KV-aware
	// routing; 0 unknown.
	KVBlockSize int
	// StartTimeout bounds Start's (and WaitReady's) wait for the engine
	// to be ready (default DefaultStartTimeout). One line is logged when
	// the wait begins, one when the engine is reached; progress in
	// between at debug level.
	StartTimeout time.Duration
	// WaitAdvice is added to the line that says the engine is waited for:
	// what sets its address and the wait's length (cmd/worker: its
	// flags and variables).
	WaitAdvice string
	// Client makes the HTTP requests; nil: one of the Engine's own, with
	// no overall timeout (streams are long), closed by Cleanup.
	Client *http.Client
	// Logger receives the engine's log lines; nil discards them.
	Logger *slog.Logger
	// KVEvents, when set, runs from Start until Cleanup in a goroutine
	// the Engine owns; every event it emits is published as the engine's
	// KV event of data-parallel rank rank (a kvblock.RouterEvent with the
	// worker's instance id). A return other than at Cleanup is logged.
	KVEvents func(ctx context.Context, emit func(rank int, ev kvblock.KVCacheEvent)) error
	// DataParallelSize is the number of ranks KVEvents publishes for
	// (default 1).
	DataParallelSize int
	// LoadInterval, when positive, is how often the engine's Prometheus
	// /metrics is read, from Start until Cleanup, in a goroutine the
	// Engine owns; each rank's load is published (a kvblock.LoadEvent)
	// when it changed. 0: off (cmd/worker's default is
	// DefaultLoadInterval). See load.go for the metric names.
	LoadInterval time.Duration
}

// Engine is a backend.Engine that forwards requests to an engine's HTTP
// server. It also implements backend.KVEventSource (it reports ranks only
// when Config.KVEvents or Config.LoadInterval is set) and
// backend.HealthProber (the engine's /health). It is safe for concurrent
// use.
type Engine struct {
	cfg    Config
	d      dialect
	base   string // URL without a trailing slash
	client *http.Client
	own    bool // client is the Engine's own (closed by Cleanup)
	// fresh sends the one retry of a request that failed on a kept-alive
	// connection, on a connection of its own (nil: client's transport is
	// not an *http.Transport; the retry goes through client).
	fresh *http.Client
	log   *slog.Logger

	mu       sync.Mutex
	pub      backend.EventPublisher
	info     engineInfo // from Start
	started  bool
	cleaned  bool
	cancelBG context.CancelFunc // stops the KV-event source and the load poller
	bg       sync.WaitGroup     // counts them
}

var (
	_ backend.Engine        = (*Engine)(nil)
	_ backend.KVEventSource = (*Engine)(nil)
	_ backend.HealthProber  = (*Engine)(nil)
)

// New returns an Engine for cfg. It starts nothing and sends nothing.
func New(cfg Config) (*Engine, error) {
	d, err := dialectOf(cfg.Dialect)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: engine URL %q: want http://host:port", ErrInvalidConfig, cfg.URL)
	}
	switch {
	case cfg.ContextLength < 0:
		return nil, fmt.Errorf("%w: context length %d must not be negative", ErrInvalidConfig, cfg.ContextLength)
	case cfg.KVBlockSize < 0:
		return nil, fmt.Errorf("%w: KV block size %d must not be negative", ErrInvalidConfig, cfg.KVBlockSize)
	case cfg.StartTimeout < 0:
		return nil, fmt.Errorf("%w: start timeout %v must not be negative", ErrInvalidConfig, cfg.StartTimeout)
	case cfg.LoadInterval < 0:
		return nil, fmt.Errorf("%w: load interval %v must not be negative", ErrInvalidConfig, cfg.LoadInterval)
	case cfg.VLLMAPI != "" && cfg.VLLMAPI != VLLMAPIAuto && cfg.VLLMAPI != VLLMAPIGenerate && cfg.VLLMAPI != VLLMAPICompletions:
		return nil, fmt.Errorf("%w: vLLM API %q: want %s, %s or %s", ErrInvalidConfig, cfg.VLLMAPI, VLLMAPIAuto, VLLMAPIGenerate, VLLMAPICompletions)
	case cfg.DataParallelSize < 0:
		return nil, fmt.Errorf("%w: data-parallel size %d must not be negative", ErrInvalidConfig, cfg.DataParallelSize)
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.DataParallelSize == 0 {
		cfg.DataParallelSize = 1
	}
	e := &Engine{cfg: cfg, d: d, base: strings.TrimRight(cfg.URL, "/"), client: cfg.Client, log: cfg.Logger}
	if e.client == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		// Engines' servers close idle keep-alive connections after 5 s
		// (llama-server's cpp-httplib, uvicorn's default): give ours up
		// first, so that a request rarely meets one the server closed.
		t.IdleConnTimeout = idleConnTimeout
		e.client = &http.Client{Transport: t}
		e.own = true
	}
	if t, ok := e.client.Transport.(*http.Transport); ok {
		one := t.Clone()
		one.DisableKeepAlives = true
		e.fresh = &http.Client{Transport: one, CheckRedirect: e.client.CheckRedirect, Jar: e.client.Jar}
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	return e, nil
}

// dialectOf returns the dialect called name.
func dialectOf(name string) (dialect, error) {
	switch name {
	case DialectVLLM:
		return vllm{}, nil
	case DialectSGLang:
		return sglang{}, nil
	case DialectLlamaCpp:
		return llamacpp{}, nil
	}
	return nil, fmt.Errorf("%w: dialect %q: want vllm, sglang or llamacpp", ErrInvalidConfig, name)
}

// KVEventSources returns the data-parallel ranks 0..DataParallelSize-1
// when Config.KVEvents or Config.LoadInterval is set, else none.
func (e *Engine) KVEventSources() []int {
	if e.cfg.KVEvents == nil && e.cfg.LoadInterval == 0 {
		return nil
	}
	ranks := make([]int, e.cfg.DataParallelSize)
	for i := range ranks {
		ranks[i] = i
	}
	return ranks
}

// SetEventPublisher sets where KV events and loads go; call it before
// Start.
func (e *Engine) SetEventPublisher(p backend.EventPublisher) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pub = p
}

// Start waits for the engine to be ready, checks the model it serves and
// reads its context length, then starts the KV-event source and the load
// poller.
func (e *Engine) Start(ctx context.Context, workerID uint64) (backend.Config, error) {
	e.mu.Lock()
	if e.started || e.cleaned {
		e.mu.Unlock()
		return backend.Config{}, fmt.Errorf("bridge: Start called twice or after Cleanup")
	}
	e.mu.Unlock()
	if err := e.waitReady(ctx); err != nil {
		return backend.Config{}, err
	}
	info, err := e.d.info(ctx, e)
	if err != nil {
		return backend.Config{}, fmt.Errorf("bridge: %s engine at %s: model info: %w", e.cfg.Dialect, e.base, err)
	}
	if len(info.models) == 0 {
		return backend.Config{}, fmt.Errorf("bridge: %s engine at %s reports no served model", e.cfg.Dialect, e.base)
	}
	served, ok := pickModel(info.models, e.cfg.Models)
	info.served = served
	if !ok {
		info.served = info.models[0].id
	}
	checked := false
	if e.cfg.Vocabulary != nil {
		if checked, err = e.checkVocabulary(ctx, info); err != nil {
			return backend.Config{}, err
		}
	}
	if !ok {
		var serves []string
		for _, m := range info.models {
			s := strconv.Quote(m.id)
			if len(m.aliases) > 0 {
				s += " (" + quoted(m.aliases, ", ") + ")"
			}
			serves = append(serves, s)
		}
		if !checked {
			return backend.Config{}, fmt.Errorf("%w: the %s engine at %s serves %s, not %s: start it with that model, or give the name it serves",
				ErrModelMismatch, e.cfg.Dialect, e.base, strings.Join(serves, ", "), quoted(e.cfg.Models, " or "))
		}
		e.log.Info("bridge: the engine serves the model under another name; its vocabulary agrees with the model's tokenizer",
			"dialect", e.cfg.Dialect, "serves", strings.Join(serves, ", "), "want", strings.Join(e.cfg.Models, ", "), "served_as", cmp.Or(e.cfg.Name, info.served))
	}
	if e.cfg.ContextLength > 0 {
		info.contextLength = e.cfg.ContextLength
	}
	if info.contextLength == 0 {
		e.log.Warn("bridge: the engine does not report its context length; set it to advertise one", "dialect", e.cfg.Dialect, "url", e.base)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cleaned {
		return backend.Config{}, fmt.Errorf("bridge: Cleanup ran during Start")
	}
	e.info, e.started = info, true
	bg, cancel := context.WithCancel(context.Background())
	e.cancelBG = cancel
	if e.cfg.KVEvents != nil {
		e.startKVEvents(bg, workerID)
	}
	if e.cfg.LoadInterval > 0 {
		e.startLoad(bg, workerID)
	}
	name := cmp.Or(e.cfg.Name, info.served)
	e.log.Info("bridge: engine ready", "dialect", e.cfg.Dialect, "url", e.base, "model", info.served, "served_as", name, "context_length", info.contextLength)
	return backend.Config{
		Model:            name,
		ContextLength:    info.contextLength,
		KVBlockSize:      e.cfg.KVBlockSize,
		DataParallelSize: e.cfg.DataParallelSize,
		Native:           info.native,
	}, nil
}

// quoted quotes each of names and joins them with sep.
func quoted(names []string, sep string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, sep)
}

// pickModel returns the id of the first served model that one of want
// names (any of its names equal to a wanted one, or their paths' last
// elements equal), or the first model's id when want is empty.
func pickModel(models []servedModel, want []string) (string, bool) {
	if len(want) == 0 {
		return models[0].id, true
	}
	base := func(s string) string {
		s = strings.TrimRight(s, "/")
		return s[strings.LastIndex(s, "/")+1:]
	}
	for _, m := range models {
		for _, n := range m.names() {
			for _, w := range want {
				if w != "" && (n == w || base(n) == base(w)) {
					return m.id, true
				}
			}
		}
	}
	return "", false
}

// startKVEvents runs Config.KVEvents until ctx ends (Cleanup); e.bg
// counts the goroutine. e.mu is held.
func (e *Engine) startKVEvents(ctx context.Context, workerID uint64) {
	pub := e.pub
	emit := func(rank int, ev kvblock.KVCacheEvent) {
		if pub == nil {
			return
		}
		if err := pub.PublishKVEvent(ctx, rank, kvblock.RouterEvent{WorkerID: workerID, Event: ev}); err != nil && ctx.Err() == nil {
			e.log.Warn("bridge: publish KV event", "rank", rank, "err", err)
		}
	}
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		if err := e.cfg.KVEvents(ctx, emit); err != nil && ctx.Err() == nil {
			e.log.Error("bridge: the KV-event source stopped; KV-aware routing gets no more events from this worker", "err", err)
		}
	}()
}

// Cleanup stops the KV-event source and the load poller and closes idle
// connections. It is idempotent and works without Start.
func (e *Engine) Cleanup(ctx context.Context) error {
	e.mu.Lock()
	e.cleaned = true
	cancel := e.cancelBG
	e.cancelBG = nil
	e.mu.Unlock()
	if cancel != nil {
		cancel()
		done := make(chan struct{})
		go func() { e.bg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("bridge: the KV-event source or the load poller did not stop: %w", context.Cause(ctx))
		}
	}
	if e.own {
		e.client.CloseIdleConnections()
	}
	return nil
}

// WaitReady polls the engine's /health until it answers ready, for at
// most Config.StartTimeout, as Start does first: a caller that waits for
// other dependencies too (cmd/worker: etcd and NATS) calls it beside
// them, and Start's own wait then ends at its first probe. It logs one
// line when the wait begins (where, until when, Config.WaitAdvice) and
// one when the engine is reached, and returns an error wrapping
// ErrNotReady when the engine is not ready in time or ctx ends first.
// It starts nothing and may be called before Start.
func (e *Engine) WaitReady(ctx context.Context) error { return e.waitReady(ctx) }

// waitReady polls the engine's health until it is ready or StartTimeout
// passes: one line when the wait begins, progress every few seconds at
// debug level, one line when the engine is reached.
func (e *Engine) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.StartTimeout)
	defer cancel()
	start := time.Now()
	lastLog := start
	const poll, logEvery = 250 * time.Millisecond, 5 * time.Second
	var last error // the last answer before the wait ran out
	for {
		err := e.d.health(ctx, e)
		if err == nil {
			if last != nil {
				e.log.Info("bridge: engine reached", "dialect", e.cfg.Dialect, "url", e.base, "waited", time.Since(start).Round(time.Millisecond))
			}
			return nil
		}
		if last == nil && ctx.Err() == nil {
			args := []any{"dialect", e.cfg.Dialect, "url", e.base, "status", err.Error()}
			if d, ok := ctx.Deadline(); ok {
				args = append(args, "until", d.Format(time.TimeOnly))
			}
			if e.cfg.WaitAdvice != "" {
				args = append(args, "advice", e.cfg.WaitAdvice)
			}
			e.log.Info("bridge: waiting for the engine; retrying", args...)
		}
		if ctx.Err() == nil || last == nil {
			last = err
		}
		if ctx.Err() != nil {
			why := last.Error()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("%w: the %s engine at %s did not become ready within %v (last: %s)", ErrNotReady, e.cfg.Dialect, e.base, e.cfg.StartTimeout, why)
			}
			return fmt.Errorf("%w: waiting for the %s engine at %s: %w (last: %s)", ErrNotReady, e.cfg.Dialect, e.base, context.Cause(ctx), why)
		}
		if time.Since(lastLog) >= logEvery {
			lastLog = time.Now()
			e.log.Debug("bridge: still waiting for the engine", "dialect", e.cfg.Dialect, "url", e.base,
				"waited", time.Since(start).Round(time.Second), "timeout", e.cfg.StartTimeout, "status", err.Error())
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// startedInfo returns the engine's info from Start, and whether Start
// succeeded.
func (e *Engine) startedInfo() (engineInfo, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.info, e.started
}
