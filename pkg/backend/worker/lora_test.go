package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/hfhub"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
	"github.com/dynamo-go/dynamo/pkg/runtime/runtimetest"
)

// loraScripted is the scripted engine with LoRA adapters: a request for
// an adapter emits 1000+i instead of i, and an adapter loads from a
// directory that holds adapter_config.json.
type loraScripted struct {
	scripted
	generated atomic.Int64 // Generate calls

	lmu    sync.Mutex
	loaded map[string]string
}

func newLoraScripted() *loraScripted { return &loraScripted{loaded: map[string]string{}} }

func (e *loraScripted) LoadLora(_ context.Context, name, path string) error {
	if _, err := os.Stat(filepath.Join(path, "adapter_config.json")); err != nil {
		return runtime.NewError(backend.TypeInvalidArgument, "engine: %s holds no adapter_config.json", path)
	}
	e.lmu.Lock()
	defer e.lmu.Unlock()
	e.loaded[name] = path
	return nil
}

func (e *loraScripted) UnloadLora(_ context.Context, name string) error {
	e.lmu.Lock()
	defer e.lmu.Unlock()
	delete(e.loaded, name)
	return nil
}

func (e *loraScripted) path(name string) string {
	e.lmu.Lock()
	defer e.lmu.Unlock()
	return e.loaded[name]
}

func (e *loraScripted) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	e.generated.Add(1)
	if req.Routing == nil || req.Routing.LoraName == nil {
		return e.scripted.Generate(ctx, req, emit)
	}
	e.lmu.Lock()
	_, ok := e.loaded[*req.Routing.LoraName]
	e.lmu.Unlock()
	if !ok {
		return runtime.NewError(backend.TypeInvalidArgument, "engine: adapter %s not loaded", *req.Routing.LoraName)
	}
	n := req.MaxTokens(8)
	for i := range n {
		if err := emit(backend.Tokens(uint32(1000 + i))); err != nil {
			return err
		}
	}
	return emit(backend.Length().WithUsage(len(req.TokenIDs), n))
}

// adapterDir makes a directory an adapter loads from.
func adapterDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "adapter_config.json"), []byte(`{"r": 8}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// newEtcdHarness is newHarness on a real etcd, with the TCP request
// plane.
func newEtcdHarness(t *testing.T, eng backend.Engine, cfg worker.Config) *harness {
	t.Helper()
	rcfg := runtime.Config{Discovery: runtime.DiscoveryEtcd, EtcdEndpoints: []string{testenv.StartEtcd(t).URL},
		TCPHost: "127.0.0.1", SystemPort: runtime.SystemPortDisabled, GracePeriod: 100 * time.Millisecond}
	h := &harness{runErr: make(chan error, 1)}
	h.worker = runtimetest.Start(t, rcfg, runtime.Deps{})
	h.caller = runtimetest.Start(t, rcfg, runtime.Deps{})
	cfg.Endpoint, cfg.ModelPath, cfg.ValidateStreams = testEP, demoModel, true
	ctx, cancel := context.WithCancel(context.Background())
	h.stopWorker = cancel
	go func() { h.runErr <- worker.Run(ctx, h.worker, eng, cfg) }()
	t.Cleanup(func() { cancel(); <-h.runErr })
	h.connect(t)
	return h
}

// callLora sends one request to the worker's lora endpoint.
func callLora(t *testing.T, h *harness, req modelcard.LoraRequest) (modelcard.LoraResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cl, err := h.caller.Endpoint(runtime.EndpointID{Namespace: testEP.Namespace, Component: testEP.Component, Name: modelcard.LoraEndpoint}).Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := cl.WaitForInstances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(req)
	var res modelcard.LoraResult
	rc := runtime.NewContext(ctx, "")
	defer rc.Release()
	err = cl.Call(rc, ids[0], payload, func(item []byte) error { return json.Unmarshal(item, &res) })
	return res, err
}

// cards returns the published cards by key.
func cards(t *testing.T, h *harness) map[string]*modelcard.Card {
	t.Helper()
	kvs, err := h.caller.Store().List(t.Context(), "v1/mdc/test/backend/generate/")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*modelcard.Card{}
	for _, kv := range kvs {
		out[kv.Key] = decodeCard(t, kv.Value)
	}
	return out
}

func loraRequest(name string) backend.Request {
	r := request(3)
	r.Routing = &backend.Routing{LoraName: backend.Ptr(name)}
	return r
}

func tokens(outs []*backend.Output) []uint32 {
	var out []uint32
	for _, o := range outs {
		out = append(out, o.TokenIDs...)
	}
	return out
}

// Loading an adapter through the lora endpoint publishes its card in
// discovery (a copy of the base card under the adapter's name, under the
// base card's key plus the adapter's suffix); requests for it are served
// by the adapter; unloading withdraws the card and refuses its requests.
func TestLoraEndpointLoadServeUnload(t *testing.T) {
	eng := newLoraScripted()
	h := newEtcdHarness(t, eng, worker.Config{})
	source := "file://" + adapterDir(t)

	res, err := callLora(t, h, modelcard.LoraRequest{Op: modelcard.LoraLoad, Name: "sql-expert", Source: source})
	if err != nil {
		t.Fatal(err)
	}
	if want := []modelcard.LoraState{{Name: "sql-expert", Source: source, Active: true}}; !slices.Equal(res.Adapters, want) {
		t.Fatalf("load answered %+v, want %+v", res.Adapters, want)
	}
	all := cards(t, h)
	var base, adapter *modelcard.Card
	for key, c := range all {
		if strings.HasSuffix(key, "/"+modelcard.LoraSuffix("sql-expert")) {
			adapter = c
		} else {
			base = c
		}
	}
	if len(all) != 2 || base == nil || adapter == nil {
		t.Fatalf("cards %v: want the base card and the adapter's under .../%s", slices.Collect(func(yield func(string) bool) {
			for k := range all {
				if !yield(k) {
					return
				}
			}
		}), modelcard.LoraSuffix("sql-expert"))
	}
	if adapter.DisplayName != "sql-expert" || adapter.Lora == nil ||
		*adapter.Lora != (modelcard.Lora{Name: "sql-expert", BaseModel: "scripted-model", Source: source}) || base.Lora != nil {
		t.Fatalf("adapter card %q lora %+v; base lora %+v", adapter.DisplayName, adapter.Lora, base.Lora)
	}
	if adapter.KVCacheBlockSize != base.KVCacheBlockSize || adapter.ContextLength != base.ContextLength {
		t.Fatal("the adapter's card is not a copy of the base card")
	}

	baseOuts, err := h.generate(runtime.NewContext(t.Context(), ""), request(3), nil)
	if err != nil {
		t.Fatal(err)
	}
	loraOuts, err := h.generate(runtime.NewContext(t.Context(), ""), loraRequest("sql-expert"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tokens(loraOuts), []uint32{1000, 1001, 1002}; !slices.Equal(got, want) || slices.Equal(got, tokens(baseOuts)) {
		t.Fatalf("adapter answered %v (base %v), want %v", got, tokens(baseOuts), want)
	}

	if res, err = callLora(t, h, modelcard.LoraRequest{Op: modelcard.LoraList}); err != nil || len(res.Adapters) != 1 {
		t.Fatalf("list = %+v, %v", res, err)
	}
	if res, err = callLora(t, h, modelcard.LoraRequest{Op: modelcard.LoraUnload, Name: "sql-expert"}); err != nil || len(res.Adapters) != 0 {
		t.Fatalf("unload = %+v, %v", res, err)
	}
	if all := cards(t, h); len(all) != 1 {
		t.Fatalf("%d cards after unload, want the base card only", len(all))
	}
	before := eng.generated.Load()
	_, err = h.generate(runtime.NewContext(t.Context(), ""), loraRequest("sql-expert"), nil)
	if !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), `LoRA adapter "sql-expert" is not loaded on this worker`) {
		t.Fatalf("request after unload: %v", err)
	}
	if eng.generated.Load() != before {
		t.Fatal("the engine saw a request for an adapter the worker does not hold")
	}
	if _, err := callLora(t, h, modelcard.LoraRequest{Op: modelcard.LoraUnload, Name: "sql-expert"}); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Fatalf("second unload: %v", err)
	}
}

// A load that fails answers the reason and registers nothing.
func TestLoraLoadFailuresSayWhyAndRegisterNothing(t *testing.T) {
	eng := newLoraScripted()
	h := newEtcdHarness(t, eng, worker.Config{})
	good := adapterDir(t)
	for _, tc := range []struct {
		name, source, want string
	}{
		{"a", "file:///nonexistent/adapter", "no such file or directory"},
		{"a", "file://" + t.TempDir(), "holds no adapter_config.json"}, // the engine refuses it
		{"a", "adapters/a", "a relative path"},
		{"a", "s3://bucket/a", "scheme s3 is not supported"},
		{"a", "", "empty"},
		{"a/b", good, `LoRA adapter name "a/b"`},
		{"", good, "LoRA adapter name"},
	} {
		_, err := callLora(t, h, modelcard.LoraRequest{Op: modelcard.LoraLoad, Name: tc.name, Source: tc.source})
		if !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("load %q from %q: %v, want InvalidArgument saying %q", tc.name, tc.source, err, tc.want)
		}
	}
	if _, err := callLora(t, h, modelcard.LoraRequest{Op: "reload"}); err == nil || !strings.Contains(err.Error(), `lora op "reload"`) {
		t.Errorf("unknown op: %v", err)
	}
	if all := cards(t, h); len(all) != 1 {
		t.Fatalf("%d cards after failed loads, want the base card only", len(all))
	}
	// The same name again from the same source is a no-op; from another,
	// an error.
	if _, err := callLora(t, h, modelcard.LoraRequest{Op: modelcard.LoraLoad, Name: "a", Source: good}); err != nil {
		t.Fatal(err)
	}
	if _, err := callLora(t, h, modelcard.LoraRequest{Op: modelcard.LoraLoad, Name: "a", Source: good}); err != nil {
		t.Fatalf("same source again: %v", err)
	}
	_, err := callLora(t, h, modelcard.LoraRequest{Op: modelcard.LoraLoad, Name: "a", Source: adapterDir(t)})
	if !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), "already loaded from "+good) {
		t.Fatalf("another source: %v", err)
	}
}

// An engine that is not a backend.LoraEngine refuses loads clearly, and
// its worker refuses every request for an adapter.
func TestEngineWithoutLoraRefuses(t *testing.T) {
	h := newHarness(t, &scripted{}, worker.Config{})
	h.connect(t)
	_, err := callLora(t, h, modelcard.LoraRequest{Op: modelcard.LoraLoad, Name: "a", Source: adapterDir(t)})
	if !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), "this engine cannot load LoRA adapters") {
		t.Fatalf("load on an engine without LoRA: %v", err)
	}
	if _, err := h.generate(runtime.NewContext(t.Context(), ""), loraRequest("a"), nil); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Fatalf("a request for an adapter: %v", err)
	}
	// Nor can it start with adapters.
	rt := startRuntime(t, discovery.NewMemSpace())
	err = worker.Run(t.Context(), rt, &scripted{}, worker.Config{Endpoint: testEP, ModelPath: demoModel,
		Loras: []worker.LoraAdapter{{Name: "a", Source: adapterDir(t)}}})
	if err == nil || !strings.Contains(err.Error(), "--lora-adapters a=") || !strings.Contains(err.Error(), "cannot load LoRA adapters") {
		t.Fatalf("Run with adapters on an engine without LoRA: %v", err)
	}
}

// Adapters given at start are published with the base card; one that
// cannot load ends Run with the reason, and nothing stays published.
func TestLorasAtStart(t *testing.T) {
	dir := adapterDir(t)
	h := newEtcdHarness(t, newLoraScripted(), worker.Config{Loras: []worker.LoraAdapter{{Name: "sql", Source: dir}, {Name: "law", Source: "file://" + dir}}})
	names := []string{}
	for _, c := range cards(t, h) {
		names = append(names, c.DisplayName)
	}
	slices.Sort(names)
	if want := []string{"law", "scripted-model", "sql"}; !slices.Equal(names, want) {
		t.Fatalf("cards %v, want %v", names, want)
	}
	// A clean shutdown removes the adapters' cards at once, with the base
	// card (the lease is still alive).
	h.stopWorker()
	testenv.WaitFor(t, 2*time.Second, "the cards to leave at shutdown", func() bool { return len(cards(t, h)) == 0 })
	if err := <-h.runErr; err != nil {
		t.Fatalf("Run = %v", err)
	}
	h.runErr <- nil // for the cleanup

	mem := startRuntime(t, discovery.NewMemSpace())
	err := worker.Run(t.Context(), mem, newLoraScripted(), worker.Config{Endpoint: testEP, ModelPath: demoModel,
		Loras: []worker.LoraAdapter{{Name: "sql", Source: dir}, {Name: "bad", Source: t.TempDir()}}})
	if err == nil || !strings.Contains(err.Error(), "--lora-adapters bad=") || !strings.Contains(err.Error(), "holds no adapter_config.json") {
		t.Fatalf("Run with a bad adapter: %v", err)
	}
	if kvs, _ := mem.Store().List(t.Context(), "v1/mdc/"); len(kvs) != 0 {
		t.Fatalf("%d cards left after a failed start", len(kvs))
	}
}

// An hf:// source is downloaded from the hub into the Hugging Face cache
// once, then loaded from there.
func TestLoraFromTheHub(t *testing.T) {
	const commit = "0123456789abcdef0123456789abcdef01234567"
	var requests atomic.Int64
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		switch r.URL.Path {
		case "/api/models/acme/sql-lora/revision/v1":
			json.NewEncoder(w).Encode(map[string]any{"sha": commit, "siblings": []map[string]string{
				{"rfilename": "adapter_config.json"}, {"rfilename": "adapter_model.safetensors"}}})
		case "/acme/sql-lora/resolve/" + commit + "/adapter_config.json":
			w.Header().Set("ETag", `"cfg"`)
			w.Write([]byte(`{"r": 8}`))
		case "/acme/sql-lora/resolve/" + commit + "/adapter_model.safetensors":
			w.Header().Set("ETag", `"weights"`)
			w.Write([]byte("LORA"))
		default:
			w.Header().Set("X-Error-Code", "RepositoryNotFound")
			http.Error(w, "not found", http.StatusUnauthorized)
		}
	}))
	defer hub.Close()
	home := t.TempDir()
	eng := newLoraScripted()
	h := newHarness(t, eng, worker.Config{Hub: hfhub.Config{Home: home, Endpoint: hub.URL, HTTPClient: hub.Client()}})
	h.connect(t)
	if _, err := callLora(t, h, modelcard.LoraRequest{Op: modelcard.LoraLoad, Name: "sql", Source: "hf://acme/sql-lora@v1"}); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(home, "hub", "models--acme--sql-lora", "snapshots", commit)
	if got := eng.path("sql"); got != want {
		t.Fatalf("engine loaded %q, want the cache snapshot %s", got, want)
	}
	if _, err := h.generate(runtime.NewContext(t.Context(), ""), loraRequest("sql"), nil); err != nil {
		t.Fatal(err)
	}
	// Unloaded and loaded again: from the cache, without the hub.
	if _, err := callLora(t, h, modelcard.LoraRequest{Op: modelcard.LoraUnload, Name: "sql"}); err != nil {
		t.Fatal(err)
	}
	before := requests.Load()
	if _, err := callLora(t, h, modelcard.LoraRequest{Op: modelcard.LoraLoad, Name: "sql", Source: "hf://acme/sql-lora@v1"}); err != nil {
		t.Fatal(err)
	}
	if n := requests.Load() - before; n != 0 {
		t.Fatalf("a cached adapter cost %d hub requests", n)
	}
	_, err := callLora(t, h, modelcard.LoraRequest{Op: modelcard.LoraLoad, Name: "other", Source: "hf://acme/missing"})
	if !errors.Is(err, backend.ErrInvalidArgument) || !strings.Contains(err.Error(), "repository not found") {
		t.Fatalf("a missing hub repository: %v", err)
	}
}
