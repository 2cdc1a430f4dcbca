package vllmapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/mocker"
)

// ErrInvalidConfig is wrapped by every error of Config.Validate.
var ErrInvalidConfig = errors.New("vllmapi: invalid config")

// DefaultHost is the HTTP (and ZeroMQ) bind host when Config.Host is "".
const DefaultHost = "127.0.0.1"

// shutdownTimeout bounds the HTTP server's drain at the end of Run.
const shutdownTimeout = 5 * time.Second

// Config configures a Server.
type Config struct {
	// Host is the address the HTTP server and the ZeroMQ sockets bind.
	// Zero: DefaultHost.
	Host string
	// Port is the HTTP port; 0 picks a free one.
	Port int
	// Model is the served model name (/v1/models, the model field of
	// answers, the model_name metric label); required.
	Model string
	// ContextLength is max_model_len: prompt + max_tokens must fit it;
	// required.
	ContextLength int
	// BlockSize is the engine's KV block size (block_size of BlockStored
	// events, cache_config_info); required.
	BlockSize int
	// NumGPUBlocks is the engine's KV cache size per rank, for
	// cache_config_info. Zero: not reported.
	NumGPUBlocks int
	// EOSTokenIDs end a generation (unless ignore_eos); they are the
	// model's, from its generation config.
	EOSTokenIDs []uint32
	// Tokenize encodes text, for string prompts and /tokenize. Nil:
	// string prompts are answered with 400, /tokenize with 501.
	Tokenize func(text string, addSpecialTokens bool) ([]uint32, error)
	// TokenizeChat renders a conversation with the model's chat template
	// and tokenizes it, for /tokenize with messages (vLLM's
	// TokenizeChatRequest). Nil: such requests are answered with 501. An
	// error wrapping ErrBadChat is the client's (400).
	TokenizeChat func(req *backend.TokenizeRequest) ([]uint32, error)
	// Detokenize decodes ids, for the text of answers, logprob tokens and
	// /detokenize. Nil: text is "" and logprob tokens are "token_id:N".
	Detokenize func(ids []uint32, skipSpecialTokens bool) (string, error)
	// KVEvents configures the ZeroMQ KV event publisher (off when
	// KVEvents.Port < 0).
	KVEvents KVEventsConfig
	// Logger receives the server's log lines. Zero: discarded.
	Logger *slog.Logger
}

// Validate reports every problem of c, joined, each wrapping
// ErrInvalidConfig.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if c.Port < 0 || c.Port > 65535 {
		bad("port %d: want 0..65535", c.Port)
	}
	if c.Model == "" {
		bad("a served model name is required")
	}
	if c.ContextLength <= 0 {
		bad("context length must be positive, got %d", c.ContextLength)
	}
	if c.BlockSize <= 0 {
		bad("block size must be positive, got %d", c.BlockSize)
	}
	errs = append(errs, c.KVEvents.validate())
	return errors.Join(errs...)
}

// Server serves one mocker engine with vLLM's OpenAI-compatible HTTP API
// (token ids in and out) and, optionally, publishes the engine's KV events
// over ZeroMQ in vLLM's format. Run owns the engine: it starts it and
// cleans it up. See the package documentation for the wire formats.
type Server struct {
	cfg     Config
	eng     *mocker.Engine
	log     *slog.Logger
	metrics *metrics
	handler http.Handler
	kv      *publisher // nil when KV events are off
	created int64      // Unix seconds, for /v1/models

	ready    atomic.Bool // the engine started and Run has not ended
	inflight sync.WaitGroup

	lora  backend.LoraEngine // the engine's LoRA side; nil: it has none
	lmu   sync.Mutex
	loras loras // guarded by lmu

	mu       sync.Mutex
	ln       net.Listener
	sockCtx  context.Context
	sockStop context.CancelFunc
}

// New returns a Server for eng, which must not have been started. It
// sets eng's event publisher when KV events are on; it binds nothing and
// starts nothing.
func New(cfg Config, eng *mocker.Engine) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Host == "" {
		cfg.Host = DefaultHost
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, eng: eng, log: cfg.Logger, created: time.Now().Unix(),
		loras: loras{paths: map[string]string{}, loading: map[string]bool{}}}
	if le, ok := any(eng).(backend.LoraEngine); ok {
		s.lora = le
	}
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg, cfg, eng)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	if cfg.KVEvents.enabled() {
		s.kv = newPublisher(cfg.KVEvents, cfg.BlockSize, len(eng.KVEventSources()), cfg.Logger)
		eng.SetEventPublisher(s.kv)
	}
	s.handler = s.routes(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return s, nil
}

// Handler returns the HTTP handler (for tests that serve it themselves).
func (s *Server) Handler() http.Handler { return s.handler }

// Listen binds the HTTP listener and the ZeroMQ sockets; Run calls it
// when it was not called before. After it, the Addr methods answer.
func (s *Server) Listen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(s.cfg.Host, strconv.Itoa(s.cfg.Port)))
	if err != nil {
		return fmt.Errorf("vllmapi: listen: %w", err)
	}
	s.sockCtx, s.sockStop = context.WithCancel(context.Background())
	if s.kv != nil {
		if err := s.kv.listen(s.sockCtx, s.cfg.Host); err != nil {
			s.sockStop()
			ln.Close()
			return err
		}
	}
	s.ln = ln
	return nil
}

// HTTPAddr is the HTTP listener's host:port ("" before Listen).
func (s *Server) HTTPAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// KVEventsAddr is rank 0's PUB socket's host:port ("" before Listen or
// when KV events are off); rank r's is on its port + r.
func (s *Server) KVEventsAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kv == nil || s.ln == nil {
		return ""
	}
	return s.kv.pubAddr()
}

// ReplayAddr is rank 0's replay ROUTER socket's host:port ("" before
// Listen or without replay); rank r's is on its port + r.
func (s *Server) ReplayAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kv == nil || s.ln == nil {
		return ""
	}
	return s.kv.replayAddr()
}

// Run binds (unless Listen did), logs the addresses, serves HTTP (/health
// answers 503 until the engine has started), starts the engine and
// publishes its KV events, until ctx ends. Then it stops the engine
// (in-flight requests end with an error), drains the HTTP server and
// closes the sockets. It returns nil after a clean stop, or the error
// that ended it: a failed bind, start or serve.
func (s *Server) Run(ctx context.Context) (err error) {
	if err := s.Listen(); err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	serveErr := make(chan error, 1)
	wg.Go(func() { serveErr <- srv.Serve(s.ln) })
	s.log.Info("mocker: vLLM API listening", "addr", s.HTTPAddr(), "model", s.cfg.Model)
	pubCtx, stopPub := context.WithCancel(context.WithoutCancel(ctx))
	if s.kv != nil {
		wg.Go(func() { s.kv.run(pubCtx) })
		s.log.Info("mocker: vLLM KV events publishing", "pub", s.KVEventsAddr(), "replay", s.ReplayAddr(),
			"topic", s.cfg.KVEvents.Topic, "encoding", s.kv.ranks[0].cfg.Encoding, "dp_ranks", len(s.kv.ranks))
	}
	defer func() {
		s.ready.Store(false)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		if cerr := s.eng.Cleanup(cctx); cerr != nil && err == nil {
			err = cerr
		}
		if serr := srv.Shutdown(cctx); serr != nil {
			_ = srv.Close()
		}
		s.inflight.Wait()
		stopPub()
		s.sockStop()
		if s.kv != nil {
			s.kv.close()
		}
	}()

	started := make(chan error, 1)
	wg.Go(func() {
		_, err := s.eng.Start(ctx, 0)
		started <- err
	})
	for {
		select {
		case err := <-started:
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("vllmapi: start engine: %w", err)
			}
			s.ready.Store(true)
			s.log.Info("mocker: vLLM API ready", "model", s.cfg.Model)
			started = nil
		case err := <-serveErr:
			return fmt.Errorf("vllmapi: serve: %w", err)
		case <-ctx.Done():
			return nil
		}
	}
}

// routes builds the handler.
func (s *Server) routes(metricsHandler http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", s.health)
	mux.HandleFunc("GET /v1/models", s.models)
	mux.Handle("GET /metrics", metricsHandler)
	mux.HandleFunc("POST /v1/completions", s.completions)
	mux.HandleFunc("POST /inference/v1/generate", s.generate)
	mux.HandleFunc("POST /tokenize", s.tokenize)
	mux.HandleFunc("POST /detokenize", s.detokenize)
	mux.HandleFunc("POST /v1/load_lora_adapter", s.loadLora)
	mux.HandleFunc("POST /v1/unload_lora_adapter", s.unloadLora)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "Not Found", "")
	})
	return mux
}

// health answers 200 with an empty body once the engine runs, 503
// before.
func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	if !s.ready.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// modelCard is one entry of /v1/models (vLLM's ModelCard).
type modelCard struct {
	ID          string            `json:"id"`
	Object      string            `json:"object"`
	Created     int64             `json:"created"`
	OwnedBy     string            `json:"owned_by"`
	Root        string            `json:"root"`
	Parent      *string           `json:"parent"`
	MaxModelLen *int              `json:"max_model_len"`
	Permission  []modelPermission `json:"permission"`
}

// modelPermission is vLLM's ModelPermission, with its fixed values.
type modelPermission struct {
	ID                 string  `json:"id"`
	Object             string  `json:"object"`
	Created            int64   `json:"created"`
	AllowCreateEngine  bool    `json:"allow_create_engine"`
	AllowSampling      bool    `json:"allow_sampling"`
	AllowLogprobs      bool    `json:"allow_logprobs"`
	AllowSearchIndices bool    `json:"allow_search_indices"`
	AllowView          bool    `json:"allow_view"`
	AllowFineTuning    bool    `json:"allow_fine_tuning"`
	Organization       string  `json:"organization"`
	Group              *string `json:"group"`
	IsBlocking         bool    `json:"is_blocking"`
}

// models lists the served model, then the loaded LoRA adapters (with
// parent, and no max_model_len, as vLLM lists them).
func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	card := modelCard{
		ID: s.cfg.Model, Object: "model", Created: s.created, OwnedBy: "vllm", Root: s.cfg.Model,
		MaxModelLen: &s.cfg.ContextLength,
		Permission:  []modelPermission{s.permission()},
	}
	writeJSON(w, http.StatusOK, struct {
		Object string      `json:"object"`
		Data   []modelCard `json:"data"`
	}{"list", append([]modelCard{card}, s.loraCards()...)})
}

// permission is a model card's ModelPermission.
func (s *Server) permission() modelPermission {
	return modelPermission{
		ID: "modelperm-" + hexUUID(), Object: "model_permission", Created: s.created,
		AllowSampling: true, AllowLogprobs: true, AllowView: true, Organization: "*",
	}
}

// ErrBadChat is wrapped by Config.TokenizeChat's error for a conversation
// the chat template refuses.
var ErrBadChat = errors.New("vllmapi: bad chat request")

// tokenizeRequest is vLLM's TokenizeCompletionRequest (prompt) or
// TokenizeChatRequest (messages).
type tokenizeRequest struct {
	Model            string `json:"model"`
	Prompt           string `json:"prompt"`
	AddSpecialTokens *bool  `json:"add_special_tokens"`

	Messages             json.RawMessage `json:"messages"`
	Tools                json.RawMessage `json:"tools"`
	AddGenerationPrompt  *bool           `json:"add_generation_prompt"`
	ContinueFinalMessage bool            `json:"continue_final_message"`
	ChatTemplateKwargs   json.RawMessage `json:"chat_template_kwargs"`
}

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req tokenizeRequest
	if !s.decode(w, r, &req) || !s.checkModel(w, req.Model) {
		return
	}
	var ids []uint32
	var err error
	switch {
	case len(req.Messages) > 0 && string(req.Messages) != "null":
		if s.cfg.TokenizeChat == nil {
			writeError(w, http.StatusNotImplemented, "the mocker was started without a chat template", "")
			return
		}
		ids, err = s.cfg.TokenizeChat(&backend.TokenizeRequest{
			Model: req.Model, Messages: req.Messages, Tools: req.Tools,
			AddGenerationPrompt:  req.AddGenerationPrompt == nil || *req.AddGenerationPrompt,
			ContinueFinalMessage: req.ContinueFinalMessage, ChatTemplateKwargs: req.ChatTemplateKwargs,
		})
		if err != nil && !errors.Is(err, ErrBadChat) {
			writeError(w, http.StatusInternalServerError, err.Error(), "")
			return
		}
	case s.cfg.Tokenize == nil:
		writeError(w, http.StatusNotImplemented, "the mocker was started without a tokenizer", "")
		return
	default:
		ids, err = s.cfg.Tokenize(req.Prompt, req.AddSpecialTokens == nil || *req.AddSpecialTokens)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), "prompt")
		return
	}
	if ids == nil {
		ids = []uint32{}
	}
	writeJSON(w, http.StatusOK, struct {
		Count       int       `json:"count"`
		MaxModelLen int       `json:"max_model_len"`
		Tokens      []uint32  `json:"tokens"`
		TokenStrs   *[]string `json:"token_strs"`
	}{len(ids), s.cfg.ContextLength, ids, nil})
}

func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Detokenize == nil {
		writeError(w, http.StatusNotImplemented, "the mocker was started without a tokenizer", "")
		return
	}
	var req struct {
		Model  string   `json:"model"`
		Tokens []uint32 `json:"tokens"`
	}
	if !s.decode(w, r, &req) || !s.checkModel(w, req.Model) {
		return
	}
	text, err := s.cfg.Detokenize(req.Tokens, false)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), "tokens")
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Prompt string `json:"prompt"`
	}{text})
}

// decode reads a JSON body into v, answering 400 when it cannot.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error(), "")
		return false
	}
	return true
}

// maxBody caps request bodies.
const maxBody = 64 << 20

// checkModel answers 404 for a model other than the served one ("" is
// the served one) or a loaded LoRA adapter.
func (s *Server) checkModel(w http.ResponseWriter, model string) bool {
	if model == "" || model == s.cfg.Model || s.isLora(model) {
		return true
	}
	writeError(w, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist.", model), "model")
	return false
}

// errorResponse is vLLM's ErrorResponse: {"error": {...}}.
type errorResponse struct {
	Error errorInfo `json:"error"`
}

type errorInfo struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

// newError builds the error body of status (the type is the status's
// exception name, as vLLM reports it).
func newError(status int, msg, param string) errorResponse {
	typ := "InternalServerError"
	switch status {
	case http.StatusBadRequest:
		typ = "BadRequestError"
	case http.StatusNotFound:
		typ = "NotFoundError"
	case http.StatusNotImplemented:
		typ = "NotImplementedError"
	case http.StatusServiceUnavailable:
		typ = "ServiceUnavailableError"
	}
	e := errorResponse{Error: errorInfo{Message: msg, Type: typ, Code: status}}
	if param != "" {
		e.Error.Param = &param
	}
	return e
}

func writeError(w http.ResponseWriter, status int, msg, param string) {
	writeJSON(w, status, newError(status, msg, param))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// hexUUID is vLLM's random_uuid: a UUID v4 in 32 hex digits.
func hexUUID() string {
	u := uuid.New()
	const hex = "0123456789abcdef"
	b := make([]byte, 32)
	for i, c := range u {
		b[2*i], b[2*i+1] = hex[c>>4], hex[c&15]
	}
	return string(b)
}
