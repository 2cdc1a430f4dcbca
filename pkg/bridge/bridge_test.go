package bridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/backendtest"
	"github.com/dynamo-go/dynamo/pkg/bridge"
	"github.com/dynamo-go/dynamo/pkg/bridge/bridgetest"
	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

var dialects = []string{bridge.DialectVLLM, bridge.DialectSGLang, bridge.DialectLlamaCpp}

// variant is one engine API the bridge drives: a dialect, and for vLLM
// which of its endpoints (the fake serves /inference/v1/generate when
// asked, which the bridge then uses).
type variant struct {
	name    string
	dialect string
	opts    bridgetest.Options
}

var variants = []variant{
	{"vllm", bridge.DialectVLLM, bridgetest.Options{}},
	{"vllm-generate", bridge.DialectVLLM, bridgetest.Options{VLLMGenerate: true}},
	{"sglang", bridge.DialectSGLang, bridgetest.Options{}},
	{"llamacpp", bridge.DialectLlamaCpp, bridgetest.Options{}},
}

// with returns v with opts' non-zero fields on top of its own.
func (v variant) with(o bridgetest.Options) bridgetest.Options {
	o.VLLMGenerate = v.opts.VLLMGenerate
	return o
}

func newEngine(t *testing.T, cfg bridge.Config) *bridge.Engine {
	t.Helper()
	e, err := bridge.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func started(t *testing.T, dialect string, opts bridgetest.Options) (*bridge.Engine, *bridgetest.Server) {
	t.Helper()
	srv := bridgetest.New(dialect, opts)
	t.Cleanup(srv.Close)
	e := newEngine(t, bridge.Config{Dialect: dialect, URL: srv.URL, StartTimeout: 5 * time.Second})
	t.Cleanup(func() { _ = e.Cleanup(context.Background()) })
	if _, err := e.Start(t.Context(), 7); err != nil {
		t.Fatal(err)
	}
	return e, srv
}

func collect(t *testing.T, e *bridge.Engine, ctx context.Context, req *backend.Request) ([]*backend.Output, error) {
	t.Helper()
	var outs []*backend.Output
	err := e.Generate(ctx, req, func(o *backend.Output) error { outs = append(outs, o); return nil })
	return outs, err
}

func ids(outs []*backend.Output) []uint32 {
	var all []uint32
	for _, o := range outs {
		all = append(all, o.TokenIDs...)
	}
	return all
}

// The conformance kit passes against each dialect's fake server, with a
// KV-event source.
func TestConformance(t *testing.T) {
	for _, v := range variants {
		d := v.dialect
		t.Run(v.name, func(t *testing.T) {
			srv := bridgetest.New(d, v.with(bridgetest.Options{TokenDelay: 200 * time.Microsecond}))
			defer srv.Close()
			backendtest.Run(t, func(t *testing.T) backend.Engine {
				e, err := bridge.New(bridge.Config{Dialect: d, URL: srv.URL, StartTimeout: 5 * time.Second,
					KVEvents: func(ctx context.Context, emit func(int, kvblock.KVCacheEvent)) error {
						emit(0, kvblock.KVCacheEvent{EventID: 0, Data: kvblock.EventData{Cleared: true}})
						<-ctx.Done()
						return nil
					}})
				if err != nil {
					t.Fatal(err)
				}
				return e
			})
		})
	}
}

func TestStreamsTokensFinishAndUsage(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			e, _ := started(t, v.dialect, v.opts)
			outs, err := collect(t, e, t.Context(), &backend.Request{TokenIDs: []uint32{1, 2, 3}, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr[uint32](4)}})
			if err != nil {
				t.Fatal(err)
			}
			last := outs[len(outs)-1]
			if got := ids(outs); len(got) != 4 || got[0] != 1000 || got[3] != 1003 {
				t.Errorf("ids %v, want 1000..1003", got)
			}
			if last.FinishReason == nil || last.FinishReason.Kind != backend.FinishLength {
				t.Errorf("finish %v, want length", last.FinishReason)
			}
			if u := last.CompletionUsage; u == nil || u.PromptTokens != 3 || u.CompletionTokens != 4 {
				t.Errorf("usage %+v", u)
			}
			// No max_tokens: the fake answers 16 tokens ending with EOS.
			outs, err = collect(t, e, t.Context(), &backend.Request{TokenIDs: []uint32{1, 2, 3}, EOSTokenIDs: []uint32{bridgetest.EOS}})
			if err != nil {
				t.Fatal(err)
			}
			last = outs[len(outs)-1]
			if got := ids(outs); last.FinishReason.Kind != backend.FinishEOS || got[len(got)-1] != bridgetest.EOS {
				t.Errorf("EOS stream: %d ids, the last %d, finish %v", len(got), got[len(got)-1], last.FinishReason)
			}
			// Logprobs.
			outs, err = collect(t, e, t.Context(), &backend.Request{TokenIDs: []uint32{1}, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr[uint32](2)},
				OutputOptions: backend.OutputOptions{Logprobs: backend.Ptr[uint32](2)}})
			if err != nil {
				t.Fatal(err)
			}
			var top [][]struct {
				Rank    int     `json:"rank"`
				TokenID uint32  `json:"token_id"`
				Logprob float64 `json:"logprob"`
			}
			if len(outs[0].LogProbs) != 1 || outs[0].LogProbs[0] != -0.5 || json.Unmarshal(outs[0].TopLogprobs, &top) != nil ||
				len(top) != 1 || len(top[0]) != 2 || top[0][0].TokenID != 1000 || top[0][1].TokenID != 7 || top[0][1].Rank != 2 {
				t.Errorf("logprobs %v top %s", outs[0].LogProbs, outs[0].TopLogprobs)
			}
		})
	}
}

// The JSON body each engine receives.
func TestParameterMapping(t *testing.T) {
	req := &backend.Request{
		TokenIDs:    []uint32{5, 6},
		EOSTokenIDs: []uint32{2},
		StopConditions: backend.StopConditions{MaxTokens: backend.Ptr[uint32](3), StopTokenIDsHidden: []uint32{2},
			IgnoreEOS: backend.Ptr(false)},
		SamplingOptions: backend.SamplingOptions{Temperature: backend.Ptr(0.5), TopP: backend.Ptr(0.9), TopK: backend.Ptr(40),
			MinP: backend.Ptr(0.1), Seed: backend.Ptr[int64](42), PresencePenalty: backend.Ptr(0.2), FrequencyPenalty: backend.Ptr(0.3),
			RepetitionPenalty: backend.Ptr(1.1), GuidedDecoding: json.RawMessage(`{"json":{"type":"object"}}`)},
		OutputOptions: backend.OutputOptions{Logprobs: backend.Ptr[uint32](1)},
	}
	want := map[string]map[string]any{
		bridge.DialectVLLM: {"prompt": []any{5.0, 6.0}, "stream": true, "return_token_ids": true, "max_tokens": 3.0,
			"stop_token_ids": []any{2.0}, "ignore_eos": false, "temperature": 0.5, "top_p": 0.9, "top_k": 40.0, "min_p": 0.1,
			"seed": 42.0, "presence_penalty": 0.2, "frequency_penalty": 0.3, "repetition_penalty": 1.1, "logprobs": 1.0,
			"return_tokens_as_token_ids": true, "model": "fake-model",
			"stream_options":     map[string]any{"include_usage": true},
			"structured_outputs": map[string]any{"json": map[string]any{"type": "object"}}},
		bridge.DialectSGLang: {"input_ids": []any{5.0, 6.0}, "stream": true, "return_logprob": true, "top_logprobs_num": 1.0,
			"sampling_params": map[string]any{"max_new_tokens": 3.0, "stop_token_ids": []any{2.0}, "ignore_eos": false,
				"temperature": 0.5, "top_p": 0.9, "top_k": 40.0, "min_p": 0.1, "sampling_seed": 42.0, "presence_penalty": 0.2,
				"frequency_penalty": 0.3, "repetition_penalty": 1.1, "json_schema": `{"type":"object"}`}},
		bridge.DialectLlamaCpp: {"prompt": []any{5.0, 6.0}, "stream": true, "return_tokens": true, "n_predict": 3.0,
			"ignore_eos": false, "temperature": 0.5, "top_p": 0.9, "top_k": 40.0, "min_p": 0.1, "seed": 42.0,
			"presence_penalty": 0.2, "frequency_penalty": 0.3, "repeat_penalty": 1.1, "n_probs": 1.0,
			"json_schema": map[string]any{"type": "object"}},
	}
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			e, srv := started(t, d, bridgetest.Options{})
			if _, err := collect(t, e, t.Context(), req); err != nil {
				t.Fatal(err)
			}
			got := srv.Bodies()[0]
			for k, v := range want[d] {
				gb, _ := json.Marshal(got[k])
				wb, _ := json.Marshal(v)
				if string(gb) != string(wb) {
					t.Errorf("%s: %s, want %s", k, gb, wb)
				}
			}
		})
	}
}

// What a dialect cannot do is refused with InvalidArgument before
// anything is sent.
func TestRefusals(t *testing.T) {
	cases := []struct {
		dialect string
		adapt   func(r *backend.Request)
		want    string
	}{
		{bridge.DialectLlamaCpp, func(r *backend.Request) { r.SamplingOptions.N = backend.Ptr(2) }, "n = 2"},
		{bridge.DialectLlamaCpp, func(r *backend.Request) { r.StopConditions.StopTokenIDs = []uint32{9} }, "stop token id 9"},
		{bridge.DialectLlamaCpp, func(r *backend.Request) {
			r.SamplingOptions.GuidedDecoding = json.RawMessage(`{"regex":"a+"}`)
		}, "regex"},
		{bridge.DialectLlamaCpp, func(r *backend.Request) { r.StopConditions.MinTokens = backend.Ptr[uint32](3) }, "min_tokens"},
		{bridge.DialectSGLang, func(r *backend.Request) { r.SamplingOptions.N = backend.Ptr(3) }, "n = 3"},
		{bridge.DialectSGLang, func(r *backend.Request) {
			r.SamplingOptions.GuidedDecoding = json.RawMessage(`{"choice":["a","b"]}`)
		}, "choice"},
		{bridge.DialectVLLM, func(r *backend.Request) { r.Embedding = &backend.EmbeddingOptions{} }, "embeddings"},
	}
	for _, c := range cases {
		t.Run(c.dialect+"/"+c.want, func(t *testing.T) {
			e, srv := started(t, c.dialect, bridgetest.Options{})
			req := &backend.Request{TokenIDs: []uint32{1}, EOSTokenIDs: []uint32{2}}
			c.adapt(req)
			_, err := collect(t, e, t.Context(), req)
			if !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want InvalidArgument mentioning %q", err, c.want)
			}
			if n := len(srv.Bodies()); n != 0 {
				t.Errorf("%d requests reached the engine", n)
			}
		})
	}
	// The model's EOS id as a stop id is fine on llama.cpp.
	e, _ := started(t, bridge.DialectLlamaCpp, bridgetest.Options{})
	req := &backend.Request{TokenIDs: []uint32{1}, EOSTokenIDs: []uint32{2}, StopConditions: backend.StopConditions{StopTokenIDs: []uint32{2}, MaxTokens: backend.Ptr[uint32](1)}}
	if _, err := collect(t, e, t.Context(), req); err != nil {
		t.Errorf("EOS as stop id: %v", err)
	}
}

func TestEngineErrorsAreTyped(t *testing.T) {
	e, _ := started(t, bridge.DialectVLLM, bridgetest.Options{Status: 400, StatusMessage: "prompt too long"})
	_, err := collect(t, e, t.Context(), &backend.Request{TokenIDs: []uint32{1}})
	var se *bridge.StatusError
	if !errors.Is(err, backend.ErrInvalidArgument) || !errors.As(err, &se) || se.Status != 400 || !strings.Contains(err.Error(), "prompt too long") {
		t.Errorf("400: %v", err)
	}
	// The engine goes away after Start: cannot connect.
	srv := bridgetest.New(bridge.DialectSGLang, bridgetest.Options{})
	e2 := newEngine(t, bridge.Config{Dialect: bridge.DialectSGLang, URL: srv.URL})
	defer e2.Cleanup(context.Background())
	if _, err := e2.Start(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if _, err := collect(t, e2, t.Context(), &backend.Request{TokenIDs: []uint32{1}}); !errors.Is(err, backend.ErrCannotConnect) {
		t.Errorf("engine gone: %v, want CannotConnect", err)
	}
}

// A stream that breaks mid-answer is ErrStreamIncomplete, which the
// migration stage re-issues.
func TestBrokenStreamIsIncomplete(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			e, _ := started(t, v.dialect, v.with(bridgetest.Options{BreakAfter: 3}))
			outs, err := collect(t, e, t.Context(), &backend.Request{TokenIDs: []uint32{1}, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr[uint32](10)}})
			if !errors.Is(err, backend.ErrStreamIncomplete) {
				t.Fatalf("err %v after %d outputs, want ErrStreamIncomplete", err, len(outs))
			}
			if len(ids(outs)) != 3 {
				t.Errorf("%d tokens before the break, want 3", len(ids(outs)))
			}
		})
	}
}

// A stop reaches the engine (it sees the disconnect) within 2 s, and the
// stream ends with FinishCancelled.
func TestStopAbortsTheEngineRequest(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			e, srv := started(t, v.dialect, v.with(bridgetest.Options{TokenDelay: 5 * time.Millisecond}))
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			first := make(chan struct{})
			var n int
			go func() {
				done <- e.Generate(ctx, &backend.Request{TokenIDs: []uint32{1}, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr[uint32](100000)}},
					func(*backend.Output) error {
						if n++; n == 1 {
							close(first)
						}
						return nil
					})
			}()
			<-first
			cancel()
			select {
			case <-srv.Aborted():
			case <-time.After(2 * time.Second):
				t.Fatal("the engine did not see the request end within 2 s")
			}
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("killed Generate: %v", err)
			}
		})
	}
}

func TestStartWaitsForHealth(t *testing.T) {
	srv := bridgetest.New(bridge.DialectLlamaCpp, bridgetest.Options{Unhealthy: 3})
	defer srv.Close()
	e := newEngine(t, bridge.Config{Dialect: bridge.DialectLlamaCpp, URL: srv.URL, StartTimeout: 10 * time.Second})
	defer e.Cleanup(context.Background())
	cfg, err := e.Start(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if srv.HealthCalls() < 4 || cfg.ContextLength != 4096 || cfg.Model != "/models/fake-model.gguf" {
		t.Errorf("health calls %d, config %+v", srv.HealthCalls(), cfg)
	}
}

func TestStartGivesUpOnAnEngineThatNeverAnswers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	e := newEngine(t, bridge.Config{Dialect: bridge.DialectVLLM, URL: "http://" + addr, StartTimeout: 700 * time.Millisecond})
	defer e.Cleanup(context.Background())
	start := time.Now()
	_, err = e.Start(t.Context(), 1)
	if !errors.Is(err, bridge.ErrNotReady) || !strings.Contains(err.Error(), "did not become ready within 700ms") {
		t.Fatalf("err %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Start took %v", d)
	}
}

func TestModelMismatch(t *testing.T) {
	for _, d := range dialects {
		srv := bridgetest.New(d, bridgetest.Options{Model: "org/served"})
		e := newEngine(t, bridge.Config{Dialect: d, URL: srv.URL, Models: []string{"other", "org/other"}})
		_, err := e.Start(t.Context(), 1)
		if !errors.Is(err, bridge.ErrModelMismatch) || !strings.Contains(err.Error(), "served") || !strings.Contains(err.Error(), `"other"`) {
			t.Errorf("%s: %v", d, err)
		}
		_ = e.Cleanup(context.Background())
		e = newEngine(t, bridge.Config{Dialect: d, URL: srv.URL, Models: []string{"nope", "served"}})
		if cfg, err := e.Start(t.Context(), 1); err != nil || cfg.Model != "org/served" {
			t.Errorf("%s: the model's base name: %+v %v; want the engine's name for it", d, cfg, err)
		}
		_ = e.Cleanup(context.Background())
		srv.Close()
	}
}

// The model is served as Config.Name whatever the engine calls it: the
// engine's name (a GGUF file's, say) is matched against Models, or
// accepted when Models is empty, never adopted; requests to the engine
// still carry the engine's name.
func TestServedAsConfigName(t *testing.T) {
	for _, d := range dialects {
		srv := bridgetest.New(d, bridgetest.Options{Model: "qwen3-0.6b-q8_0.gguf"})
		for _, models := range [][]string{nil, {"qwen3-0.6b-q8_0.gguf"}, {"/models/qwen3-0.6b-q8_0.gguf"}} {
			e := newEngine(t, bridge.Config{Dialect: d, URL: srv.URL, Models: models, Name: "Qwen3-0.6B", StartTimeout: 5 * time.Second})
			cfg, err := e.Start(t.Context(), 1)
			if err != nil || cfg.Model != "Qwen3-0.6B" {
				t.Errorf("%s, models %q: %+v %v; want served as Qwen3-0.6B", d, models, cfg, err)
			}
			if err == nil {
				if _, err := collect(t, e, t.Context(), &backend.Request{TokenIDs: []uint32{1, 2}, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr(uint32(2))}}); err != nil {
					t.Errorf("%s, models %q: Generate: %v (the engine's name must reach the engine)", d, models, err)
				}
			}
			_ = e.Cleanup(context.Background())
		}
		srv.Close()
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []bridge.Config{{Dialect: "tgi", URL: "http://x"}, {Dialect: "vllm", URL: "x:80"}, {Dialect: "vllm", URL: "http://x", ContextLength: -1}} {
		if _, err := bridge.New(cfg); !errors.Is(err, bridge.ErrInvalidConfig) {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
}

// A graceful stop mid-stream (the frontend's stop, not a kill): the
// engine sees its request end within 2 s, and the stream ends with one
// FinishCancelled output carrying the usage of the tokens streamed, and
// no error.
func TestGracefulStopMidStream(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			e, srv := started(t, v.dialect, v.with(bridgetest.Options{TokenDelay: 5 * time.Millisecond}))
			rc := runtime.NewContext(t.Context(), "stop-"+v.name)
			defer rc.Release()
			var outs []*backend.Output
			done := make(chan error, 1)
			go func() {
				done <- e.Generate(rc, &backend.Request{TokenIDs: []uint32{1}, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr[uint32](100000)}},
					func(o *backend.Output) error {
						if outs = append(outs, o); len(outs) == 1 {
							rc.StopGenerating()
						}
						return nil
					})
			}()
			select {
			case <-srv.Aborted():
			case <-time.After(2 * time.Second):
				t.Fatal("the engine did not see the request end within 2 s of the stop")
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("stopped Generate: %v, want a clean end", err)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("Generate did not return within 2 s of the stop")
			}
			last := outs[len(outs)-1]
			if last.FinishReason == nil || last.FinishReason.Kind != backend.FinishCancelled {
				t.Fatalf("last output %+v, want FinishCancelled", last)
			}
			for _, o := range outs[:len(outs)-1] {
				if o.FinishReason != nil {
					t.Errorf("a terminal output before the last: %+v", o)
				}
			}
			if u := last.CompletionUsage; u == nil || u.CompletionTokens != len(ids(outs)) {
				t.Errorf("usage %+v, want %d completion tokens", u, len(ids(outs)))
			}
		})
	}
}
