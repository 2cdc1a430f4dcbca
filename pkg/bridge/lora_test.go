package bridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/bridge"
	"github.com/dynamo-go/dynamo/pkg/bridge/bridgetest"
)

// loraReq is a request of n tokens for adapter name ("" the base model).
func loraReq(name string, n uint32) *backend.Request {
	r := &backend.Request{TokenIDs: []uint32{1, 2, 3}, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr(n)}}
	if name != "" {
		r.Routing = &backend.Routing{LoraName: backend.Ptr(name)}
	}
	return r
}

// firstID generates req and returns its first token id: the fake
// answers 1000+i for the base model, 1000*(k+1)+i with adapter k.
func firstID(t *testing.T, e *bridge.Engine, req *backend.Request) uint32 {
	t.Helper()
	outs, err := collect(t, e, t.Context(), req)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	got := ids(outs)
	if len(got) == 0 {
		t.Fatal("no tokens")
	}
	return got[0]
}

func calls(srv *bridgetest.Server) []bridgetest.LoraCall { return srv.LoraCalls() }

// vLLM and SGLang: LoadLora and UnloadLora call the engine's endpoints
// with its bodies; a request for the adapter selects it (vLLM: model,
// SGLang: lora_path) and answers with it, the base model's without; the
// engine's refusals come back with its message.
func TestLoraRuntimeLoading(t *testing.T) {
	for _, c := range []struct {
		v                  variant
		load, unload, pick string
	}{
		{variants[0], "/v1/load_lora_adapter", "/v1/unload_lora_adapter", "model"},
		{variants[1], "/v1/load_lora_adapter", "/v1/unload_lora_adapter", "model"},
		{variants[2], "/load_lora_adapter", "/unload_lora_adapter", "lora_path"},
	} {
		t.Run(c.v.name, func(t *testing.T) {
			e, srv := started(t, c.v.dialect, c.v.with(bridgetest.Options{Loras: true, BadLoraPath: "/adapters/broken"}))
			if err := e.LoadLora(t.Context(), "sql", "/adapters/sql"); err != nil {
				t.Fatal(err)
			}
			if err := e.LoadLora(t.Context(), "chat", "/adapters/chat"); err != nil {
				t.Fatal(err)
			}
			want := []bridgetest.LoraCall{
				{Path: c.load, Body: map[string]any{"lora_name": "sql", "lora_path": "/adapters/sql"}},
				{Path: c.load, Body: map[string]any{"lora_name": "chat", "lora_path": "/adapters/chat"}},
			}
			if diff := cmp.Diff(want, calls(srv)); diff != "" {
				t.Errorf("load calls (-want +got):\n%s", diff)
			}
			if got := firstID(t, e, loraReq("chat", 2)); got != 3000 {
				t.Errorf("adapter chat's answer starts with %d, want 3000 (the second adapter's)", got)
			}
			if got := firstID(t, e, loraReq("", 2)); got != 1000 {
				t.Errorf("the base model's answer starts with %d, want 1000", got)
			}
			bodies := srv.Bodies()
			if got := bodies[len(bodies)-2][c.pick]; got != "chat" {
				t.Errorf("the adapter's request has %s = %v, want chat", c.pick, got)
			}
			if got, ok := bodies[len(bodies)-1][c.pick]; ok && got != "fake-model" {
				t.Errorf("the base request has %s = %v", c.pick, got)
			}

			// The engine's refusals, with its message.
			err := e.LoadLora(t.Context(), "sql", "/adapters/sql")
			var se *bridge.StatusError
			if !errors.As(err, &se) || !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), "already been loaded") {
				t.Errorf("loading sql twice: %v, want the engine's refusal", err)
			}
			err = e.LoadLora(t.Context(), "broken", "/adapters/broken")
			if !errors.As(err, &se) || !strings.Contains(err.Error(), "No adapter found") || !strings.Contains(err.Error(), `"broken"`) {
				t.Errorf("a bad path: %v, want the engine's message naming the adapter", err)
			}

			if err := e.UnloadLora(t.Context(), "sql"); err != nil {
				t.Fatal(err)
			}
			if got := calls(srv); len(got) < 5 || !cmp.Equal(got[4], bridgetest.LoraCall{Path: c.unload, Body: map[string]any{"lora_name": "sql"}}) {
				t.Errorf("unload call %v, want %s {lora_name: sql}", got, c.unload)
			}
			if got := srv.Loras(); !cmp.Equal(got, []string{"chat"}) {
				t.Errorf("the engine holds %v, want [chat]", got)
			}
			if _, err := collect(t, e, t.Context(), loraReq("sql", 2)); !errors.Is(err, backend.ErrInvalidArgument) {
				t.Errorf("a request for an unloaded adapter: %v, want InvalidArgument", err)
			}
			err = e.UnloadLora(t.Context(), "sql")
			if c.v.dialect == bridge.DialectVLLM && !errors.Is(err, bridge.ErrLoraNotLoaded) {
				t.Errorf("unloading sql twice: %v, want ErrLoraNotLoaded", err)
			}
			if !errors.Is(err, backend.ErrInvalidArgument) {
				t.Errorf("unloading sql twice: %v, want InvalidArgument", err)
			}
		})
	}
}

// A vLLM that holds adapters (from before the worker restarted) lists
// them among its models; a bridge that starts then serves the model, not
// an adapter.
func TestLoraAdaptersAreNotServedModels(t *testing.T) {
	e, srv := started(t, bridge.DialectVLLM, bridgetest.Options{Loras: true})
	if err := e.LoadLora(t.Context(), "sql", "/adapters/sql"); err != nil {
		t.Fatal(err)
	}
	again := newEngine(t, bridge.Config{Dialect: bridge.DialectVLLM, URL: srv.URL, StartTimeout: 5 * time.Second, Models: []string{"sql"}})
	defer func() { _ = again.Cleanup(context.Background()) }()
	if _, err := again.Start(t.Context(), 2); !errors.Is(err, bridge.ErrModelMismatch) {
		t.Errorf("Start wanting the adapter's name: %v, want ErrModelMismatch", err)
	}
	again = newEngine(t, bridge.Config{Dialect: bridge.DialectVLLM, URL: srv.URL, StartTimeout: 5 * time.Second})
	defer func() { _ = again.Cleanup(context.Background()) }()
	cfg, err := again.Start(t.Context(), 3)
	if err != nil || cfg.Model != "fake-model" {
		t.Errorf("Start: %v, serving %q; want fake-model", err, cfg.Model)
	}
}

// An engine without the runtime endpoints (vLLM without
// VLLM_ALLOW_RUNTIME_LORA_UPDATING) refuses with ErrLoraUnavailable,
// saying how to start it.
func TestLoraEndpointsMissing(t *testing.T) {
	for _, c := range []struct {
		dialect, hint string
	}{{bridge.DialectVLLM, "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True"}, {bridge.DialectSGLang, "--enable-lora"}} {
		t.Run(c.dialect, func(t *testing.T) {
			e, _ := started(t, c.dialect, bridgetest.Options{})
			err := e.LoadLora(t.Context(), "sql", "/adapters/sql")
			if !errors.Is(err, bridge.ErrLoraUnavailable) || !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), c.hint) {
				t.Errorf("LoadLora: %v, want ErrLoraUnavailable saying %s", err, c.hint)
			}
		})
	}
}

// LoadLora and UnloadLora need Start, and a name.
func TestLoraBeforeStart(t *testing.T) {
	srv := bridgetest.New(bridge.DialectVLLM, bridgetest.Options{Loras: true})
	defer srv.Close()
	e := newEngine(t, bridge.Config{Dialect: bridge.DialectVLLM, URL: srv.URL, StartTimeout: 5 * time.Second})
	defer func() { _ = e.Cleanup(context.Background()) }()
	if err := e.LoadLora(t.Context(), "sql", "/a"); !errors.Is(err, bridge.ErrNotStarted) {
		t.Errorf("LoadLora before Start: %v, want ErrNotStarted", err)
	}
	if _, err := e.Start(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	if err := e.LoadLora(t.Context(), "", "/a"); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Errorf("LoadLora without a name: %v, want InvalidArgument", err)
	}
	if err := e.LoadLora(t.Context(), "sql", ""); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Errorf("LoadLora without a path: %v, want InvalidArgument", err)
	}
	if n := len(srv.LoraCalls()); n != 0 {
		t.Errorf("%d calls reached the engine", n)
	}
}

// lora returns a llama.cpp request body's lora field as JSON ("" when
// absent).
func lora(body map[string]any) string {
	v, ok := body["lora"]
	if !ok {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// llama.cpp: the adapters are the server's (given at its start);
// LoadLora names one by its path or file name, and every request lists
// every adapter's scale: the named one at 1, the others (all, for a base
// request) at 0 — without the field llama-server would apply them all.
func TestLoraLlamaCpp(t *testing.T) {
	e, srv := started(t, bridge.DialectLlamaCpp, bridgetest.Options{LlamaLoras: []string{"/srv/loras/a.gguf", "/srv/loras/b.gguf"}})
	last := func() map[string]any { b := srv.Bodies(); return b[len(b)-1] }

	if got := firstID(t, e, loraReq("", 2)); got != 1000 {
		t.Errorf("a base request before any load starts with %d, want 1000 (no adapter)", got)
	}
	if got, want := lora(last()), `[{"id":0,"scale":0},{"id":1,"scale":0}]`; got != want {
		t.Errorf("base request lora %s, want %s", got, want)
	}
	if _, err := collect(t, e, t.Context(), loraReq("b", 2)); !errors.Is(err, bridge.ErrLoraNotLoaded) || !errors.Is(err, backend.ErrInvalidArgument) {
		t.Errorf("a request for an adapter not loaded: %v, want ErrLoraNotLoaded", err)
	}

	// b by its file name (the worker's copy lives elsewhere), a by its path.
	if err := e.LoadLora(t.Context(), "tuned-b", "/var/cache/adapters/b.gguf"); err != nil {
		t.Fatal(err)
	}
	if err := e.LoadLora(t.Context(), "tuned-a", "/srv/loras/a.gguf"); err != nil {
		t.Fatal(err)
	}
	if got := firstID(t, e, loraReq("tuned-b", 2)); got != 3000 {
		t.Errorf("adapter tuned-b's answer starts with %d, want 3000 (adapter id 1)", got)
	}
	if got, want := lora(last()), `[{"id":0,"scale":0},{"id":1,"scale":1}]`; got != want {
		t.Errorf("tuned-b's request lora %s, want %s", got, want)
	}
	if got := firstID(t, e, loraReq("tuned-a", 2)); got != 2000 {
		t.Errorf("adapter tuned-a's answer starts with %d, want 2000 (adapter id 0)", got)
	}
	if got := firstID(t, e, loraReq("", 2)); got != 1000 {
		t.Errorf("a base request starts with %d, want 1000", got)
	}

	// A file the server was not started with.
	n := len(srv.Bodies())
	err := e.LoadLora(t.Context(), "c", "/var/cache/adapters/c.gguf")
	if !errors.Is(err, bridge.ErrLoraUnavailable) || !strings.Contains(err.Error(), "--lora /var/cache/adapters/c.gguf") {
		t.Errorf("LoadLora of a file the server lacks: %v, want ErrLoraUnavailable saying to start it with --lora", err)
	}

	if err := e.UnloadLora(t.Context(), "tuned-b"); err != nil {
		t.Fatal(err)
	}
	if _, err := collect(t, e, t.Context(), loraReq("tuned-b", 2)); !errors.Is(err, bridge.ErrLoraNotLoaded) {
		t.Errorf("a request for an unloaded adapter: %v, want ErrLoraNotLoaded", err)
	}
	if got := len(srv.Bodies()); got != n {
		t.Errorf("%d refused requests reached the engine", got-n)
	}
	if err := e.UnloadLora(t.Context(), "tuned-b"); !errors.Is(err, bridge.ErrLoraNotLoaded) {
		t.Errorf("unloading twice: %v, want ErrLoraNotLoaded", err)
	}
	if got := firstID(t, e, loraReq("tuned-a", 2)); got != 2000 {
		t.Errorf("tuned-a after tuned-b's unload starts with %d, want 2000", got)
	}
}

// A llama-server without adapters: base requests carry no lora field,
// and LoadLora says to start it with --lora.
func TestLoraLlamaCppWithoutAdapters(t *testing.T) {
	e, srv := started(t, bridge.DialectLlamaCpp, bridgetest.Options{})
	firstID(t, e, loraReq("", 2))
	if got := lora(srv.Bodies()[0]); got != "" {
		t.Errorf("lora field %s, want none", got)
	}
	err := e.LoadLora(t.Context(), "a", "/x/a.gguf")
	if !errors.Is(err, bridge.ErrLoraUnavailable) || !strings.Contains(err.Error(), "--lora /x/a.gguf") {
		t.Errorf("LoadLora: %v, want ErrLoraUnavailable saying to start it with --lora", err)
	}
}
