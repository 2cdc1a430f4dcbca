package pipeline_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
	"github.com/dynamo-go/dynamo/pkg/router/kv"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
	"github.com/dynamo-go/dynamo/pkg/runtime/runtimetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const demoModel = "../../models/demo"

// echoEngine answers every request with two tokens.
type echoEngine struct{ name string }

func (e *echoEngine) Start(context.Context, uint64) (backend.Config, error) {
	return backend.Config{Model: e.name, ContextLength: 4096, KVBlockSize: 16, TotalKVBlocks: 100, MaxNumSeqs: 8}, nil
}

func (e *echoEngine) Generate(_ context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	if err := emit(backend.Tokens(39)); err != nil {
		return err
	}
	return emit(backend.Length(371).WithUsage(len(req.TokenIDs), 2))
}

func (e *echoEngine) Cleanup(context.Context) error { return nil }

// gauges records what the registry publishes.
type gauges struct {
	mu     sync.Mutex
	models map[string]pipeline.ModelConfig
}

func (g *gauges) SetModel(model string, c pipeline.ModelConfig) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.models[model] = c
}

func (g *gauges) RemoveModel(model string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.models, model)
}

func (g *gauges) get(model string) (pipeline.ModelConfig, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.models[model]
	return c, ok
}

// rig is a registry and the workers it discovers, on one in-process
// discovery.
type rig struct {
	mem    *discovery.MemSpace
	reg    *pipeline.Registry
	gauges *gauges
	log    *testenv.Buffer // the registry's log lines
	stops  map[string]func()
}

func startRuntime(t *testing.T, mem *discovery.MemSpace) *runtime.DistributedRuntime {
	t.Helper()
	return runtimetest.Start(t, runtime.Config{Discovery: runtime.DiscoveryMem, TCPHost: "127.0.0.1", GracePeriod: -1}, runtime.Deps{MemSpace: mem})
}

func newRig(t *testing.T, cfg pipeline.Config) *rig {
	t.Helper()
	r := &rig{mem: discovery.NewMemSpace(), gauges: &gauges{models: map[string]pipeline.ModelConfig{}}, log: &testenv.Buffer{}, stops: map[string]func(){}}
	reg, err := pipeline.New(cfg, pipeline.Deps{Runtime: startRuntime(t, r.mem), Metrics: r.gauges, Logger: slog.New(slog.NewTextHandler(r.log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r.reg = reg
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- reg.Run(ctx) }()
	t.Cleanup(func() {
		for _, stop := range r.stops {
			stop()
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return r
}

// addWorker starts a worker named id serving model with cfg's model
// settings (endpoint, aliases, template).
func (r *rig) addWorker(t *testing.T, id, model string, cfg worker.Config) uint64 {
	t.Helper()
	rt := startRuntime(t, r.mem)
	if cfg.Endpoint == (runtime.EndpointID{}) {
		cfg.Endpoint = runtime.EndpointID{Namespace: "dynamo", Component: "backend", Name: "generate"}
	}
	cfg.ModelPath = demoModel
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- worker.Run(ctx, rt, &echoEngine{name: model}, cfg) }()
	r.stops[id] = func() { cancel(); <-done }
	return rt.InstanceID()
}

func (r *rig) stopWorker(id string) {
	r.stops[id]()
	delete(r.stops, id)
}

// waitLogged waits until the registry has logged msg: what it logs once it
// has handled a discovery event that leaves the served models as they were.
func (r *rig) waitLogged(t *testing.T, msg string) {
	t.Helper()
	testenv.WaitFor(t, 10*time.Second, "the registry to log "+strconv.Quote(msg), func() bool { return strings.Contains(r.log.String(), msg) })
}

func names(ms []*pipeline.Model) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name())
	}
	return out
}

func generate(t *testing.T, m *pipeline.Model) (tokens int, placement *backend.Placement) {
	t.Helper()
	rc := runtime.NewContext(t.Context(), "req")
	defer rc.Release()
	err := m.Generate(rc, &backend.Request{TokenIDs: []uint32{1, 2, 3}}, func(out *backend.Output) error {
		tokens += len(out.TokenIDs)
		placement = out.Placement
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tokens, placement
}

// A model comes with its first worker and goes with its last; workers in
// between join it, and each is named in the outputs it produced.
func TestModelsFollowTheirWorkers(t *testing.T) {
	r := newRig(t, pipeline.Config{})
	testenv.WaitFor(t, 10*time.Second, "the first snapshot", r.reg.Synced)
	a := r.addWorker(t, "a", "demo", worker.Config{Aliases: []string{"demo-alias"}, MigrationLimit: 2})
	testenv.WaitFor(t, 10*time.Second, "the model", func() bool { m := r.reg.Lookup("demo"); return m != nil && m.Ready() })
	m := r.reg.Lookup("demo")
	if alias := r.reg.Lookup("demo-alias"); alias != m {
		t.Errorf("the alias names %v, want the model", alias)
	}
	if !m.Serves(modelcard.ModelChat) || !m.Serves(modelcard.ModelCompletions) {
		t.Errorf("model type %v: want chat and completions", m.Card().ModelType)
	}
	if c, ok := r.gauges.get("demo"); !ok || c.ContextLength != 4096 || c.MigrationLimit != 2 || c.TotalKVBlocks != 100 {
		t.Errorf("published %+v (%v), want the card's configuration", c, ok)
	}
	if n, p := generate(t, m); n != 2 || p == nil || p.WorkerID != a {
		t.Errorf("generated %d tokens placed on %+v, want 2 from worker %x", n, p, a)
	}

	b := r.addWorker(t, "b", "demo", worker.Config{Aliases: []string{"demo-alias"}, MigrationLimit: 2})
	testenv.WaitFor(t, 10*time.Second, "the second worker", func() bool { return len(m.Instances()) == 2 })
	served := map[uint64]bool{}
	for range 4 {
		_, p := generate(t, m)
		served[p.WorkerID] = true
	}
	if !served[a] || !served[b] {
		t.Errorf("round robin served %v, want both workers %x and %x", served, a, b)
	}
	if ids := r.reg.Instances(); len(ids) != 2 {
		t.Errorf("registry instances %v, want both workers", ids)
	}

	r.stopWorker("a")
	testenv.WaitFor(t, 10*time.Second, "the first worker to leave", func() bool { return len(m.Instances()) == 1 })
	if r.reg.Lookup("demo") != m {
		t.Fatal("the model left with a worker that was not its last")
	}
	r.stopWorker("b")
	testenv.WaitFor(t, 10*time.Second, "the model to leave", func() bool { return r.reg.Lookup("demo") == nil })
	if r.reg.Lookup("demo-alias") != nil || len(r.reg.Models()) != 0 {
		t.Errorf("after the last worker: alias %v, models %v", r.reg.Lookup("demo-alias"), names(r.reg.Models()))
	}
	if _, ok := r.gauges.get("demo"); ok {
		t.Error("the model's gauges outlived it")
	}
}

// Workers of one model must agree on its card; two models keep apart even
// on one endpoint; a namespace filter hides the rest.
func TestCardsThatDisagreeOrDoNotBelong(t *testing.T) {
	r := newRig(t, pipeline.Config{Namespace: "prod"})
	prod := runtime.EndpointID{Namespace: "prod", Component: "backend", Name: "generate"}
	first := r.addWorker(t, "a", "demo", worker.Config{Endpoint: prod})
	r.addWorker(t, "b", "other", worker.Config{Endpoint: prod})
	r.addWorker(t, "c", "hidden", worker.Config{Endpoint: runtime.EndpointID{Namespace: "staging", Component: "backend", Name: "generate"}})
	testenv.WaitFor(t, 10*time.Second, "two models", func() bool { return len(r.reg.Models()) == 2 })
	if got := names(r.reg.Models()); !slices.Equal(got, []string{"demo", "other"}) {
		t.Errorf("models %v, want demo and other (sorted), and not the staging one", got)
	}

	// Another chat template makes another card: that worker is ignored.
	tmpl := filepath.Join(t.TempDir(), "t.jinja")
	if err := os.WriteFile(tmpl, []byte("{% for m in messages %}{{ m.content }}{% endfor %}"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.addWorker(t, "d", "demo", worker.Config{Endpoint: prod, ChatTemplateFile: tmpl})
	r.waitLogged(t, "pipeline: worker's model card differs from the model's; instance ignored")
	m := r.reg.Lookup("demo")
	if ids := m.Instances(); len(ids) != 1 || ids[0].ID != first {
		t.Errorf("demo is served by %v, want only its first worker %x", ids, first)
	}
	for range 3 {
		if _, p := generate(t, m); p.WorkerID != first {
			t.Errorf("a demo request went to %x, not to demo's worker %x", p.WorkerID, first)
		}
	}
}

// With --router-mode kv and no event plane, the model routes in
// approximate mode and says so; routing queries and busy thresholds work,
// and the KV router's goroutines end with the model.
func TestKVRoutedModel(t *testing.T) {
	r := newRig(t, pipeline.Config{RouterMode: pipeline.RouterKV})
	id := r.addWorker(t, "a", "demo", worker.Config{})
	testenv.WaitFor(t, 10*time.Second, "the model", func() bool { m := r.reg.Lookup("demo"); return m != nil && m.Ready() })
	m := r.reg.Lookup("demo")
	if mode, fallback, ok := m.KVRouting(); !ok || mode != kv.ModeApproximate || !fallback {
		t.Errorf("KVRouting() = %q, %v, %v; want approximate as a fallback", mode, fallback, ok)
	}
	prompt := make([]uint32, 64)
	p, err := m.Decide(&backend.Request{TokenIDs: prompt})
	if err != nil || p.WorkerID != id || p.PromptBlocks == nil || *p.PromptBlocks != 4 {
		t.Fatalf("Decide = %+v, %v; want worker %x and 4 prompt blocks", p, err, id)
	}
	frac := 0.5
	if now, err := m.UpdateBusyThresholds(pipeline.BusyThresholds{ActiveDecodeBlocks: &frac}); err != nil || *now.ActiveDecodeBlocks != 0.5 {
		t.Errorf("UpdateBusyThresholds = %+v, %v", now, err)
	}
	if _, p := generate(t, m); p.WorkerID != id || p.OverlapBlocks == nil {
		t.Errorf("a KV-routed output is placed %+v; want worker %x with its overlap", p, id)
	}
	r.stopWorker("a")
	testenv.WaitFor(t, 10*time.Second, "the model to leave", func() bool { return r.reg.Lookup("demo") == nil })
	// goleak (TestMain) fails the package if the KV router's Run outlived
	// the model.
}

func TestNotKVRoutedAnswers(t *testing.T) {
	r := newRig(t, pipeline.Config{RouterMode: pipeline.RouterRandom})
	r.addWorker(t, "a", "demo", worker.Config{})
	testenv.WaitFor(t, 10*time.Second, "the model", func() bool { return r.reg.Lookup("demo") != nil })
	m := r.reg.Lookup("demo")
	if _, _, ok := m.KVRouting(); ok {
		t.Error("a randomly routed model reports KV routing")
	}
	if _, err := m.Decide(&backend.Request{}); !errors.Is(err, pipeline.ErrNotKVRouted) {
		t.Errorf("Decide = %v, want ErrNotKVRouted", err)
	}
	if _, err := m.BusyThresholds(); !errors.Is(err, pipeline.ErrNotKVRouted) {
		t.Errorf("BusyThresholds = %v, want ErrNotKVRouted", err)
	}
}

func TestNewRefusesWhatItCannotBuild(t *testing.T) {
	if _, err := pipeline.New(pipeline.Config{}, pipeline.Deps{}); err == nil {
		t.Error("New without a runtime succeeded")
	}
	rt := startRuntime(t, discovery.NewMemSpace())
	if _, err := pipeline.New(pipeline.Config{RouterMode: "fastest"}, pipeline.Deps{Runtime: rt}); err == nil {
		t.Error("New with an unknown router mode succeeded")
	}
}

// When discovery stops reporting (the runtime closed its store), Run says
// so instead of serving a frozen view.
func TestRunEndsWhenDiscoveryEnds(t *testing.T) {
	mem := discovery.NewMemSpace()
	rt, err := runtime.New(t.Context(), runtime.Config{Discovery: runtime.DiscoveryMem, TCPHost: "127.0.0.1", GracePeriod: -1}, runtime.Deps{MemSpace: mem})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := pipeline.New(pipeline.Config{}, pipeline.Deps{Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- reg.Run(context.Background()) }()
	testenv.WaitFor(t, 10*time.Second, "the first snapshot", reg.Synced)
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, pipeline.ErrWatchEnded) {
			t.Errorf("Run = %v, want ErrWatchEnded", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end with discovery")
	}
}
