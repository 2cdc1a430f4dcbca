// Package bridgetest is a fake engine HTTP server for testing
// pkg/bridge and the worker binary: it speaks the vLLM, SGLang or
// llama.cpp dialect faithfully enough for the bridge (token ids in, a
// streamed answer of token ids out, finish reasons, usage, /health, model
// info, /metrics with the load gauges of each dialect) and notices when
// a client disconnects mid-stream.
package bridgetest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynamo-go/dynamo/pkg/bridge/vllmwire"
)

// Options shape a Server.
type Options struct {
	// Model is the served model name (default "fake-model").
	Model string
	// ContextLength is reported by the model info (default 4096).
	ContextLength int
	// Unhealthy makes /health answer 503 this many times first.
	Unhealthy int
	// TokenDelay is the time between streamed tokens (default 1 ms).
	TokenDelay time.Duration
	// DefaultTokens is the answer's length when the request sets none
	// (default 16); it then ends with EOS id 2.
	DefaultTokens int
	// BreakAfter, when positive, cuts the connection after that many
	// tokens without an end.
	BreakAfter int
	// Status, when set, is the status of every generation request, with
	// an error body carrying StatusMessage.
	Status        int
	StatusMessage string
	// VLLMGenerate (dialect vllm) also serves vLLM's token-in/token-out
	// endpoint POST /inference/v1/generate, streaming as vLLM does: one
	// chunk per output with new tokens, the finish with the last token,
	// logprobs in the chat shape.
	VLLMGenerate bool
	// OmitFinish leaves finish_reason out of /inference/v1/generate's
	// chunks, as vLLM does when a finish comes without a new token.
	OmitFinish bool
	// Loras serves the LoRA endpoints of vLLM (POST /v1/load_lora_adapter,
	// /v1/unload_lora_adapter) and SGLang (POST /load_lora_adapter,
	// /unload_lora_adapter); without it they answer 404 {"detail":"Not
	// Found"}, as a vLLM without VLLM_ALLOW_RUNTIME_LORA_UPDATING does.
	// See lora.go for what an adapter changes in an answer.
	Loras bool
	// BadLoraPath is an adapter path whose load the engine refuses (400
	// with the engine's message).
	BadLoraPath string
	// LlamaLoras (dialect llamacpp) are the adapter files the server was
	// started with (--lora): GET /lora-adapters lists them, ids from 0,
	// scale 1.
	LlamaLoras []string
}

// Server is a running fake engine. Its fields are read with the methods.
type Server struct {
	*httptest.Server
	dialect string
	opts    Options

	mu       sync.Mutex
	bodies   []map[string]any
	headers  []http.Header
	probes   int
	unhealth int
	aborted  chan struct{} // one send per request the client abandoned
	health   atomic.Int64
	metrics  metricsState
	loras    loraState
}

// EOS is the fake model's end-of-sequence id.
const EOS = 2

// New starts a Server speaking dialect ("vllm", "sglang", "llamacpp") on
// loopback. Close it when done.
func New(dialect string, opts Options) *Server {
	if opts.Model == "" {
		opts.Model = "fake-model"
	}
	if opts.ContextLength == 0 {
		opts.ContextLength = 4096
	}
	if opts.TokenDelay == 0 {
		opts.TokenDelay = time.Millisecond
	}
	if opts.DefaultTokens == 0 {
		opts.DefaultTokens = 16
	}
	s := &Server{dialect: dialect, opts: opts, unhealth: opts.Unhealthy, aborted: make(chan struct{}, 1024)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", s.handleHealth)
	mux.HandleFunc("GET /metrics", s.handleMetrics)
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		data := []any{map[string]any{"id": opts.Model, "object": "model", "root": opts.Model, "max_model_len": opts.ContextLength}}
		if dialect == "vllm" {
			data = append(data, s.loraModels()...) // vLLM lists its adapters, with parent
		}
		writeJSON(w, 200, map[string]any{"object": "list", "data": data})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		if dialect == "llamacpp" {
			writeJSON(w, 404, map[string]any{"error": map[string]any{"code": 404, "message": "File Not Found", "type": "not_found_error"}})
			return
		}
		writeJSON(w, 404, map[string]any{"detail": "Not Found"}) // FastAPI's
	})
	s.loraRoutes(mux)
	switch dialect {
	case "vllm":
		mux.HandleFunc("POST "+vllmwire.CompletionsPath, s.generate)
		if opts.VLLMGenerate {
			mux.HandleFunc("POST "+vllmwire.GeneratePath, s.generate)
		}
	case "sglang":
		mux.HandleFunc("GET /get_model_info", func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, 200, map[string]any{"model_path": opts.Model, "is_generation": true})
		})
		mux.HandleFunc("POST /generate", s.generate)
	case "llamacpp":
		mux.HandleFunc("GET /props", func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, 200, map[string]any{"model_path": "/models/" + opts.Model + ".gguf",
				"default_generation_settings": map[string]any{"n_ctx": opts.ContextLength}})
		})
		mux.HandleFunc("POST /completion", s.generate)
	default:
		panic("bridgetest: unknown dialect " + dialect)
	}
	s.Server = httptest.NewServer(mux)
	return s
}

// Probes returns how many of the bridge's probes of
// /inference/v1/generate (token_ids [0], max_tokens 1) were answered;
// they are not among Bodies.
func (s *Server) Probes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.probes
}

// Bodies returns the JSON bodies of the generation requests received.
func (s *Server) Bodies() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.bodies...)
}

// Headers returns the HTTP headers of the generation requests received,
// in the order of Bodies.
func (s *Server) Headers() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...)
}

// Aborted receives once per generation request the client abandoned
// before its end.
func (s *Server) Aborted() <-chan struct{} { return s.aborted }

// HealthCalls returns how many times /health was asked.
func (s *Server) HealthCalls() int { return int(s.health.Load()) }

func (s *Server) handleHealth(w http.ResponseWriter, _ *http.Request) {
	s.health.Add(1)
	s.mu.Lock()
	sick := s.unhealth > 0
	if sick {
		s.unhealth--
	}
	s.mu.Unlock()
	if sick {
		writeJSON(w, 503, map[string]any{"error": map[string]any{"code": 503, "message": "Loading model", "type": "unavailable_error"}})
		return
	}
	if s.dialect == "llamacpp" {
		writeJSON(w, 200, map[string]any{"status": "ok"})
		return
	}
	w.WriteHeader(200)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// num reads a JSON number field.
func num(m map[string]any, key string) (int, bool) {
	f, ok := m[key].(float64)
	return int(f), ok
}

func (s *Server) generate(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeJSON(w, 400, map[string]any{"error": map[string]any{"message": err.Error(), "code": 400}})
		return
	}
	gen := r.URL.Path == vllmwire.GeneratePath
	sp, _ := body["sampling_params"].(map[string]any)
	s.mu.Lock()
	if ids, _ := body["token_ids"].([]any); gen && len(ids) == 1 && ids[0] == 0.0 && sp["max_tokens"] == 1.0 {
		s.probes++
	} else {
		s.bodies = append(s.bodies, body)
		s.headers = append(s.headers, r.Header.Clone())
	}
	s.mu.Unlock()
	if s.opts.Status != 0 {
		writeJSON(w, s.opts.Status, map[string]any{"error": map[string]any{"message": s.opts.StatusMessage, "code": s.opts.Status}})
		return
	}
	adapter, lerr := s.adapterOf(body)
	if lerr != nil {
		writeJSON(w, lerr.status, map[string]any{"error": map[string]any{"message": lerr.msg, "code": lerr.status}})
		return
	}
	var prompt []any
	var limit int
	var hasLimit bool
	var stops []any
	sampling := body
	switch s.dialect {
	case "vllm":
		prompt, _ = body["prompt"].([]any)
		limit, hasLimit = num(body, "max_tokens")
		stops, _ = body["stop_token_ids"].([]any)
		if gen {
			prompt, _ = body["token_ids"].([]any)
			sampling = sp
			limit, hasLimit = num(sp, "max_tokens")
			stops, _ = sp["stop_token_ids"].([]any)
		}
	case "sglang":
		prompt, _ = body["input_ids"].([]any)
		sampling, _ = body["sampling_params"].(map[string]any)
		limit, hasLimit = num(sampling, "max_new_tokens")
		stops, _ = sampling["stop_token_ids"].([]any)
	case "llamacpp":
		prompt, _ = body["prompt"].([]any)
		limit, hasLimit = num(body, "n_predict")
		hasLimit = hasLimit && limit >= 0
	}
	if len(prompt) == 0 {
		writeJSON(w, 400, map[string]any{"error": map[string]any{"message": "empty prompt", "code": 400}})
		return
	}
	if !hasLimit {
		limit = s.opts.DefaultTokens
	}
	stopSet := map[int]bool{}
	for _, v := range stops {
		if f, ok := v.(float64); ok {
			stopSet[int(f)] = true
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	fl := w.(http.Flusher)
	fl.Flush()
	st := &stream{s: s, w: w, fl: fl, prompt: len(prompt), generate: gen,
		logprobs: body["logprobs"] != nil || body["return_logprob"] == true || body["n_probs"] != nil || sp["logprobs"] != nil}
	for i := 0; ; i++ {
		// Token i: EOS at DefaultTokens when no limit was asked for, a
		// stop id when it is one, else 1000+i.
		if i == limit {
			st.finish("length", nil)
			return
		}
		tok := 1000*(adapter+1) + i
		// A request without its own limit (none, or the context's room
		// the bridge fills in) ends with EOS.
		if (!hasLimit || limit == s.opts.ContextLength-len(prompt)) && i == s.opts.DefaultTokens-1 {
			tok = EOS
		}
		if s.opts.BreakAfter > 0 && i == s.opts.BreakAfter {
			hj, ok := w.(http.Hijacker)
			if ok {
				if c, _, err := hj.Hijack(); err == nil {
					_ = c.Close()
				}
			}
			return
		}
		select {
		case <-r.Context().Done():
			s.aborted <- struct{}{}
			return
		case <-time.After(s.opts.TokenDelay):
		}
		st.tokens = append(st.tokens, tok)
		if tok == EOS {
			st.finish("stop", tok)
			return
		}
		if stopSet[tok] {
			st.finish("stop", tok)
			return
		}
		if gen && i == limit-1 {
			st.finish("length", tok) // vLLM's finish comes with the last token
			return
		}
		st.send([]int{tok}, nil)
	}
}

// stream writes one answer in the server's dialect.
type stream struct {
	s        *Server
	w        http.ResponseWriter
	fl       http.Flusher
	prompt   int
	tokens   []int
	logprobs bool
	generate bool // /inference/v1/generate
}

func (st *stream) event(v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(st.w, "data: %s\n\n", b)
	st.fl.Flush()
}

// send writes a chunk of new tokens; reason is nil, or the finish.
func (st *stream) send(toks []int, finish map[string]any) {
	n := len(st.tokens)
	switch {
	case st.generate:
		st.sendGenerate(toks, finish)
		return
	}
	switch st.s.dialect {
	case "vllm":
		ch := vllmwire.CompletionStreamChoice{Text: "x", TokenIDs: ids(toks)}
		if finish != nil {
			ch.FinishReason, ch.StopReason = reasonOf(finish), finish["matched"]
		}
		if st.logprobs && len(toks) > 0 {
			lp := &vllmwire.CompletionLogProbs{TextOffset: []int{0}, TokenLogprobs: []float64{}, Tokens: []string{}, TopLogprobs: []map[string]float64{}}
			for _, t := range toks {
				lp.TokenLogprobs = append(lp.TokenLogprobs, -0.5)
				lp.Tokens = append(lp.Tokens, fmt.Sprintf("token_id:%d", t))
				lp.TopLogprobs = append(lp.TopLogprobs, map[string]float64{fmt.Sprintf("token_id:%d", t): -0.5, "token_id:7": -1.5})
			}
			ch.Logprobs = lp
		}
		st.event(vllmwire.CompletionStreamResponse{ID: "cmpl-1", Object: "text_completion", Model: st.s.opts.Model, Choices: []vllmwire.CompletionStreamChoice{ch}})
	case "sglang":
		all := append([]int{}, st.tokens...) // cumulative, SGLang's default
		mi := map[string]any{"id": "rid", "prompt_tokens": st.prompt, "completion_tokens": n, "cached_tokens": 1, "finish_reason": nil}
		if finish != nil {
			switch finish["reason"] {
			case "length":
				mi["finish_reason"] = map[string]any{"type": "length", "length": n}
			default:
				mi["finish_reason"] = map[string]any{"type": "stop", "matched": finish["matched"]}
			}
		}
		if st.logprobs {
			var lps []any
			var tops []any
			for _, t := range all {
				lps = append(lps, []any{-0.5, t, nil})
				tops = append(tops, []any{[]any{-0.5, t, nil}, []any{-1.5, 7, nil}})
			}
			mi["output_token_logprobs"], mi["output_top_logprobs"] = lps, tops
		}
		st.event(map[string]any{"text": strings.Repeat("x", len(all)), "output_ids": all, "meta_info": mi}) // cumulative too
	case "llamacpp":
		c := map[string]any{"index": 0, "content": strings.Repeat("x", len(toks)), "tokens": toks, "stop": false, "id_slot": 0}
		if st.logprobs && len(toks) > 0 {
			var probs []any
			for _, t := range toks {
				probs = append(probs, map[string]any{"id": t, "token": "x", "logprob": -0.5, "bytes": []int{120},
					"top_logprobs": []any{map[string]any{"id": t, "token": "x", "logprob": -0.5}, map[string]any{"id": 7, "token": "y", "logprob": -1.5}}})
			}
			c["completion_probabilities"] = probs
		}
		st.event(c)
		if finish != nil {
			stopType := map[string]string{"length": "limit", "stop": "eos"}[finish["reason"].(string)]
			st.event(map[string]any{"content": "", "tokens": []int{}, "stop": true, "stop_type": stopType, "stopping_word": "",
				"tokens_predicted": n, "tokens_evaluated": st.prompt, "timings": map[string]any{"cache_n": 1, "prompt_n": st.prompt - 1}})
		}
	}
}

// finish writes the last chunk (with the finishing token, if any), the
// usage and the end marker.
func (st *stream) finish(reason string, matched any) {
	var toks []int
	if matched != nil {
		toks = []int{matched.(int)}
	}
	fin := map[string]any{"reason": reason, "matched": matched}
	if reason == "stop" && matched == EOS && st.s.dialect == "vllm" {
		fin["matched"] = nil // vLLM's stop_reason is null for EOS
	}
	st.send(toks, fin)
	if st.generate {
		n := len(st.tokens)
		st.event(vllmwire.GenerateStreamResponse{RequestID: "generate-tokens-1", Choices: []vllmwire.GenerateChoice{},
			Usage: &vllmwire.UsageInfo{PromptTokens: st.prompt, CompletionTokens: n, TotalTokens: st.prompt + n}})
	} else if st.s.dialect == "vllm" {
		n := len(st.tokens)
		st.event(vllmwire.CompletionUsageChunk{ID: "cmpl-1", Object: "text_completion", Model: st.s.opts.Model, Choices: []vllmwire.CompletionStreamChoice{},
			Usage: vllmwire.UsageInfo{PromptTokens: st.prompt, CompletionTokens: n, TotalTokens: st.prompt + n,
				PromptTokensDetails: &vllmwire.PromptTokenUsageInfo{CachedTokens: 1}}})
	}
	if st.s.dialect != "llamacpp" {
		fmt.Fprint(st.w, "data: [DONE]\n\n")
		st.fl.Flush()
	}
}

// sendGenerate writes a GenerateStreamResponse chunk; vLLM sends none
// for an output without new tokens.
func (st *stream) sendGenerate(toks []int, finish map[string]any) {
	if len(toks) == 0 {
		return
	}
	ch := vllmwire.GenerateChoice{TokenIDs: ids(toks)}
	if finish != nil && !st.s.opts.OmitFinish {
		ch.FinishReason = reasonOf(finish)
	}
	if st.logprobs {
		lp := &vllmwire.ChatCompletionLogProbs{}
		for _, t := range toks {
			name := fmt.Sprintf("token_id:%d", t)
			lp.Content = append(lp.Content, vllmwire.ChatLogProb{Token: name, Logprob: -0.5,
				TopLogprobs: []vllmwire.ChatLogProb{{Token: "token_id:7", Logprob: -1.5}, {Token: name, Logprob: -0.5}}})
		}
		ch.Logprobs = lp
	}
	st.event(vllmwire.GenerateStreamResponse{RequestID: "generate-tokens-1", Choices: []vllmwire.GenerateChoice{ch}})
}

// ids is toks as token ids (nil stays nil: JSON null).
func ids(toks []int) []uint32 {
	if toks == nil {
		return nil
	}
	out := make([]uint32, len(toks))
	for i, t := range toks {
		out[i] = uint32(t)
	}
	return out
}

// reasonOf is a finish's reason, as a finish_reason field.
func reasonOf(finish map[string]any) *string {
	r, _ := finish["reason"].(string)
	return &r
}
