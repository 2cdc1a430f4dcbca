package pipeline_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

var prefillEP = runtime.EndpointID{Namespace: "dynamo", Component: "prefill", Name: "generate"}

// decodeEngine records the requests it gets and generates max_tokens
// tokens; the first drops calls overall break after 2 tokens, like a
// worker that crashed.
type decodeEngine struct {
	mu    sync.Mutex
	reqs  []*backend.Request
	drops *atomic.Int32
}

func (e *decodeEngine) Start(context.Context, uint64) (backend.Config, error) {
	return backend.Config{Model: "demo", ContextLength: 4096, KVBlockSize: 16, TotalKVBlocks: 100, MaxNumSeqs: 8}, nil
}

func (e *decodeEngine) Cleanup(context.Context) error { return nil }

func (e *decodeEngine) Generate(_ context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	e.mu.Lock()
	e.reqs = append(e.reqs, req)
	e.mu.Unlock()
	drop := e.drops != nil && e.drops.Add(-1) >= 0
	n := req.MaxTokens(4)
	for i := range n - 1 {
		if drop && i == 2 {
			return backend.ErrDropStream
		}
		if err := emit(backend.Tokens(39)); err != nil {
			return err
		}
	}
	return emit(backend.Length(371))
}

func (e *decodeEngine) requests() []*backend.Request {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*backend.Request(nil), e.reqs...)
}

// addDecode starts a decode worker of the demo model serving eng.
func (r *rig) addDecode(t *testing.T, id string, eng *decodeEngine) uint64 {
	t.Helper()
	rt := startRuntime(t, r.mem)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- worker.Run(ctx, rt, eng, worker.Config{
			Endpoint: runtime.EndpointID{Namespace: "dynamo", Component: "backend", Name: "generate"}, ModelPath: demoModel,
		})
	}()
	r.stops[id] = func() { cancel(); <-done }
	return rt.InstanceID()
}

// prefillFake is a prefill worker: it serves prefillEP (one output with
// disaggregated_params) and publishes a card of model type Prefill for
// the demo model, as the worker side will.
type prefillFake struct {
	id    uint64
	key   string
	rt    *runtime.DistributedRuntime
	calls atomic.Int32
}

func (r *rig) addPrefill(t *testing.T, contextLength int) *prefillFake {
	t.Helper()
	rt := startRuntime(t, r.mem)
	p := &prefillFake{id: rt.InstanceID(), rt: rt}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = rt.Endpoint(prefillEP).Serve(ctx, runtime.HandlerFunc(func(_ *runtime.Context, _ []byte, emit func([]byte) error) error {
			p.calls.Add(1)
			out := backend.Length(39).WithUsage(3, 1)
			out.DisaggregatedParams, _ = json.Marshal(backend.DisaggregatedParams{WorkerID: &backend.PrefillWorker{PrefillWorkerID: p.id}})
			b, _ := backend.AppendOutputJSON(nil, out)
			return emit(b)
		}))
	}()
	t.Cleanup(func() { cancel(); <-done })
	card, err := modelcard.FromDir(demoModel, modelcard.Options{Name: "demo", Source: demoModel, ModelTypes: []string{"prefill"},
		DisaggregationMode: "prefill", ContextLength: contextLength, KVCacheBlockSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := modelcard.NewRecord(prefillEP.Namespace, prefillEP.Component, prefillEP.Name, p.id, card)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(rec)
	p.key = rec.Key()
	if err := rt.Store().Put(t.Context(), p.key, b); err != nil {
		t.Fatal(err)
	}
	return p
}

// leave removes the prefill worker's card, as its shutdown does.
func (p *prefillFake) leave(t *testing.T) {
	t.Helper()
	if err := p.rt.Store().Delete(t.Context(), p.key); err != nil {
		t.Fatal(err)
	}
}

func generateN(t *testing.T, m *pipeline.Model, max int) (int, *backend.Placement) {
	t.Helper()
	rc := runtime.NewContext(t.Context(), "")
	defer rc.Release()
	n := 0
	var placement *backend.Placement
	err := m.Generate(rc, &backend.Request{TokenIDs: []uint32{1, 2, 3}, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr(uint32(max))}},
		func(out *backend.Output) error {
			n += len(out.TokenIDs)
			placement = out.Placement
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return n, placement
}

// A model's prefill workers: a prefill-only model is neither listed nor
// served; once its decode workers come, its requests are prefilled on the
// prefill workers; when the last prefill worker leaves, it is served
// decode-only again. A prefill worker of another card is refused.
func TestPrefillPoolFollowsPrefillWorkers(t *testing.T) {
	r := newRig(t, pipeline.Config{})
	testenv.WaitFor(t, 10*time.Second, "the first snapshot", r.reg.Synced)
	pre := r.addPrefill(t, 4096)
	r.waitLogged(t, "pipeline: prefill worker joined model")
	if ms := r.reg.Models(); len(ms) != 0 || r.reg.Lookup("demo") != nil {
		t.Fatalf("with only prefill workers the registry serves %v, want nothing", names(ms))
	}

	eng := &decodeEngine{}
	dec := r.addDecode(t, "d", eng)
	testenv.WaitFor(t, 10*time.Second, "the model, disaggregated", func() bool {
		m := r.reg.Lookup("demo")
		return m != nil && m.Ready() && m.Disaggregated()
	})
	if ms := r.reg.Models(); len(ms) != 1 || ms[0].Name() != "demo" {
		t.Fatalf("models %v, want demo once", names(ms))
	}
	m := r.reg.Lookup("demo")
	n, p := generateN(t, m, 4)
	if n != 4 || p == nil || p.WorkerID != dec || p.PrefillWorkerID == nil || *p.PrefillWorkerID != pre.id {
		t.Fatalf("generated %d tokens placed %+v; want 4 decoded by %x, prefilled by %x", n, p, dec, pre.id)
	}
	if reqs := eng.requests(); len(reqs) != 1 || reqs[0].PrefillResult == nil || reqs[0].MaxTokens(0) != 4 {
		t.Fatalf("decode requests %+v, want one with the prefill's result", reqs)
	}
	if pre.calls.Load() != 1 {
		t.Errorf("prefill worker called %d times, want 1", pre.calls.Load())
	}

	pre.leave(t)
	testenv.WaitFor(t, 10*time.Second, "disaggregation to end", func() bool { return !m.Disaggregated() })
	if n, p := generateN(t, m, 4); n != 4 || p.PrefillWorkerID != nil {
		t.Errorf("after the prefill workers left: %d tokens, placement %+v; want 4, decode-only", n, p)
	}
	if reqs := eng.requests(); len(reqs) != 2 || reqs[1].PrefillResult != nil {
		t.Errorf("the second decode request %+v, want a bare one", reqs[1])
	}

	r.addPrefill(t, 2048) // another context length: another card
	r.waitLogged(t, "pipeline: prefill worker's model card differs from the model's")
	if m.Disaggregated() {
		t.Errorf("a prefill worker with a different model card was attached")
	}
	r.stopWorker("d")
}

// A decode worker that breaks mid-stream: migration re-issues the request
// with the tokens so far, and the retry goes decode-only (the new decode
// worker recomputes); the prompt is prefilled once.
func TestDecodeFailureMigratesDecodeOnly(t *testing.T) {
	limit := 1
	r := newRig(t, pipeline.Config{MigrationLimit: &limit})
	testenv.WaitFor(t, 10*time.Second, "the first snapshot", r.reg.Synced)
	pre := r.addPrefill(t, 4096)
	drops := &atomic.Int32{}
	drops.Store(1)
	a, b := &decodeEngine{drops: drops}, &decodeEngine{drops: drops}
	r.addDecode(t, "a", a)
	r.addDecode(t, "b", b)
	testenv.WaitFor(t, 10*time.Second, "the model, disaggregated, with both decode workers", func() bool {
		m := r.reg.Lookup("demo")
		return m != nil && len(m.Instances()) == 2 && m.Disaggregated()
	})
	n, _ := generateN(t, r.reg.Lookup("demo"), 6)
	if n != 6 {
		t.Fatalf("generated %d tokens, want 6 across the migration", n)
	}
	reqs := append(a.requests(), b.requests()...)
	if len(reqs) != 2 {
		t.Fatalf("%d decode requests, want 2 (the first broke)", len(reqs))
	}
	var first, retry *backend.Request
	for _, q := range reqs {
		if len(q.TokenIDs) == 3 {
			first = q
		} else {
			retry = q
		}
	}
	if first == nil || retry == nil || first.PrefillResult == nil {
		t.Fatalf("decode requests %+v: want the first with a prefill result and a longer retry", reqs)
	}
	if retry.PrefillResult != nil || len(retry.TokenIDs) != 5 || retry.MaxTokens(0) != 4 {
		t.Errorf("retry: prefill_result %v, %d token ids, max_tokens %d; want decode-only with the 2 generated tokens appended and 4 left",
			retry.PrefillResult, len(retry.TokenIDs), retry.MaxTokens(0))
	}
	if pre.calls.Load() != 1 {
		t.Errorf("prefilled %d times, want once", pre.calls.Load())
	}
	r.stopWorker("a")
	r.stopWorker("b")
}
