package vllmapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// fakeLora is a backend.LoraEngine that records its calls; a path under
// /missing does not exist. With next (the mocker engine) it loads every
// other adapter there, from dir (an adapter directory), so that the
// engine serves it.
type fakeLora struct {
	mu    sync.Mutex
	calls []string
	next  backend.LoraEngine
	dir   string
}

func (f *fakeLora) LoadLora(ctx context.Context, name, path string) error {
	f.mu.Lock()
	f.calls = append(f.calls, "load "+name+" "+path)
	f.mu.Unlock()
	if strings.HasPrefix(path, "/missing") {
		return fmt.Errorf("mocker: LoRA adapter %s: %w", path, fs.ErrNotExist)
	}
	if f.next != nil {
		return f.next.LoadLora(ctx, name, f.dir)
	}
	return nil
}

func (f *fakeLora) UnloadLora(ctx context.Context, name string) error {
	f.mu.Lock()
	f.calls = append(f.calls, "unload "+name)
	f.mu.Unlock()
	if f.next != nil {
		return f.next.UnloadLora(ctx, name)
	}
	return nil
}

func (f *fakeLora) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// errorBody decodes vLLM's ErrorResponse.
func errorBody(t *testing.T, b []byte) errorInfo {
	t.Helper()
	var e errorResponse
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("error body %s: %v", b, err)
	}
	return e.Error
}

// modelIDs lists /v1/models: each id, with its parent when it has one.
func modelIDs(t *testing.T, s *Server) []string {
	t.Helper()
	resp, err := http.Get(s.url("/v1/models"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []modelCard `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range list.Data {
		id := m.ID
		if m.Parent != nil {
			id += " < " + *m.Parent + " @ " + m.Root
		}
		ids = append(ids, id)
	}
	return ids
}

// The runtime LoRA endpoints load and unload through the engine's
// LoraEngine, with vLLM's answers; a loaded adapter is a model of
// /v1/models (with its parent) and is served by name.
func TestLoraEndpoints(t *testing.T) {
	fake := &fakeLora{dir: t.TempDir()}
	if err := os.WriteFile(filepath.Join(fake.dir, "adapter_config.json"), []byte(`{"r": 8}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := testServerWith(t, nil, func(s *Server) { fake.next, s.lora = s.lora, fake })

	resp, body := post(t, s, "/v1/load_lora_adapter", map[string]any{"lora_name": "sql", "lora_path": "/adapters/sql"})
	if resp.StatusCode != 200 || string(body) != "Success: LoRA adapter 'sql' added successfully." {
		t.Fatalf("load: %d %s", resp.StatusCode, body)
	}
	if diff := cmp.Diff([]string{"mock-model", "sql < mock-model @ /adapters/sql"}, modelIDs(t, s)); diff != "" {
		t.Errorf("/v1/models (-want +got):\n%s", diff)
	}

	// Served by name, on both endpoints; the answer carries its name.
	resp, body = post(t, s, "/v1/completions", map[string]any{"model": "sql", "prompt": prompt(4), "max_tokens": 2})
	var c chunk
	if resp.StatusCode != 200 || json.Unmarshal(body, &c) != nil || c.Model != "sql" {
		t.Errorf("completion for the adapter: %d %s, want 200 with model sql", resp.StatusCode, body)
	}
	resp, body = post(t, s, "/inference/v1/generate", map[string]any{"model": "sql", "token_ids": prompt(4), "sampling_params": map[string]any{"max_tokens": 2}})
	if resp.StatusCode != 200 {
		t.Errorf("generate for the adapter: %d %s", resp.StatusCode, body)
	}

	for _, c := range []struct {
		name, path string
		body       map[string]any
		status     int
		typ, msg   string
	}{
		{"twice", "/v1/load_lora_adapter", map[string]any{"lora_name": "sql", "lora_path": "/adapters/sql"}, 400, "InvalidUserInput", "The lora adapter 'sql' has already been loaded."},
		{"no path", "/v1/load_lora_adapter", map[string]any{"lora_name": "x"}, 400, "InvalidUserInput", "Both 'lora_name' and 'lora_path' must be provided."},
		{"no such path", "/v1/load_lora_adapter", map[string]any{"lora_name": "x", "lora_path": "/missing/x"}, 404, "NotFoundError", "mocker: LoRA adapter /missing/x: file does not exist"},
		{"unload unknown", "/v1/unload_lora_adapter", map[string]any{"lora_name": "x"}, 404, "NotFoundError", "The lora adapter 'x' cannot be found."},
	} {
		resp, body := post(t, s, c.path, c.body)
		if e := errorBody(t, body); resp.StatusCode != c.status || e.Type != c.typ || e.Message != c.msg || e.Code != c.status {
			t.Errorf("%s: %d %s, want %d %s %q", c.name, resp.StatusCode, body, c.status, c.typ, c.msg)
		}
	}

	resp, body = post(t, s, "/v1/unload_lora_adapter", map[string]any{"lora_name": "sql"})
	if resp.StatusCode != 200 || string(body) != "Success: LoRA adapter 'sql' removed successfully." {
		t.Fatalf("unload: %d %s", resp.StatusCode, body)
	}
	if got := modelIDs(t, s); !cmp.Equal(got, []string{"mock-model"}) {
		t.Errorf("/v1/models after the unload: %v", got)
	}
	resp, body = post(t, s, "/v1/completions", map[string]any{"model": "sql", "prompt": prompt(4), "max_tokens": 2})
	if e := errorBody(t, body); resp.StatusCode != 404 || e.Message != "The model `sql` does not exist." {
		t.Errorf("completion for the unloaded adapter: %d %s, want 404", resp.StatusCode, body)
	}
	want := []string{"load sql /adapters/sql", "load x /missing/x", "unload sql"}
	if diff := cmp.Diff(want, fake.Calls()); diff != "" {
		t.Errorf("engine calls (-want +got):\n%s", diff)
	}
}

// A request for a loaded adapter reaches the engine with
// Routing.LoraName, beside the data-parallel rank; the served model's
// does not.
func TestLoraRouting(t *testing.T) {
	s := testServerWith(t, nil, func(s *Server) { s.lora = &fakeLora{} })
	if resp, body := post(t, s, "/v1/load_lora_adapter", map[string]any{"lora_name": "sql", "lora_path": "/a"}); resp.StatusCode != 200 {
		t.Fatalf("load: %d %s", resp.StatusCode, body)
	}
	br := &backend.Request{Routing: &backend.Routing{DPRank: backend.Ptr[uint32](0)}}
	if model, ok := s.withLora(httptest.NewRecorder(), "sql", br); !ok || model != "sql" || br.Routing.LoraName == nil || *br.Routing.LoraName != "sql" || br.Routing.DPRank == nil {
		t.Errorf("adapter request: model %q, %v, routing %+v", model, ok, br.Routing)
	}
	br = &backend.Request{}
	if model, ok := s.withLora(httptest.NewRecorder(), "mock-model", br); !ok || model != "mock-model" || br.Routing != nil {
		t.Errorf("base request: model %q, %v, routing %+v", model, ok, br.Routing)
	}
	w := httptest.NewRecorder()
	if _, ok := s.withLora(w, "gone", &backend.Request{}); ok || w.Code != 404 {
		t.Errorf("unknown adapter: %v, status %d", ok, w.Code)
	}
}

// An engine without LoRA: the endpoints answer 400 in vLLM's shape.
func TestLoraNotEnabled(t *testing.T) {
	s := testServerWith(t, nil, func(s *Server) { s.lora = nil })
	for _, path := range []string{"/v1/load_lora_adapter", "/v1/unload_lora_adapter"} {
		resp, body := post(t, s, path, map[string]any{"lora_name": "sql", "lora_path": "/a"})
		if e := errorBody(t, body); resp.StatusCode != 400 || e.Type != "BadRequestError" || !strings.Contains(e.Message, "LoRA is not enabled") {
			t.Errorf("%s: %d %s, want 400 LoRA is not enabled", path, resp.StatusCode, body)
		}
	}
}
