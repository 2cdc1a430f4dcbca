package prefill_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/router"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
	"github.com/dynamo-go/dynamo/pkg/runtime/runtimetest"
	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

var (
	prefillEP = runtime.EndpointID{Namespace: "dynamo", Component: "prefill", Name: "generate"}
	decodeEP  = runtime.EndpointID{Namespace: "dynamo", Component: "backend", Name: "generate"}
)

// fleet is in-process prefill and decode workers (real runtimes on mem
// discovery, TCP request plane on loopback) and the caller's routers.
type fleet struct {
	mem    *discovery.MemSpace
	caller *runtime.DistributedRuntime

	mu       sync.Mutex
	prefills []*backend.Request // requests the prefill workers got
	decodes  []*backend.Request // requests the decode workers got
	rooms    map[uint64]chan struct{}
	boot     map[uint64]int // prefill worker -> bootstrap port
}

// prefillWorker is how a fake prefill worker behaves.
type prefillWorker struct {
	bootstrap bool          // it publishes a bootstrap endpoint
	crash     bool          // it dies mid-prefill (no final marker)
	block     chan struct{} // if set: closed when a prefill starts; the prefill waits until stopped
	stopped   chan struct{} // if set: closed when the prefill saw its stop
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	f := &fleet{mem: discovery.NewMemSpace(), rooms: map[uint64]chan struct{}{}, boot: map[uint64]int{}}
	f.caller = f.runtime(t)
	return f
}

func (f *fleet) runtime(t *testing.T) *runtime.DistributedRuntime {
	t.Helper()
	return runtimetest.Start(t, runtime.Config{
		Discovery: runtime.DiscoveryMem, TCPHost: "127.0.0.1", InhibitDuration: time.Minute,
		SystemPort: runtime.SystemPortDisabled, GracePeriod: -1,
	}, runtime.Deps{MemSpace: f.mem})
}

func (f *fleet) room(id uint64) chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := f.rooms[id]
	if ch == nil {
		ch = make(chan struct{})
		f.rooms[id] = ch
	}
	return ch
}

func serve(t *testing.T, rt *runtime.DistributedRuntime, ep runtime.EndpointID, h runtime.HandlerFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = rt.Endpoint(ep).Serve(ctx, h) }()
	t.Cleanup(func() { cancel(); <-done })
}

func send(emit func([]byte) error, out *backend.Output) error {
	b, err := backend.AppendOutputJSON(nil, out)
	if err != nil {
		return err
	}
	return emit(b)
}

// addPrefill starts a prefill worker; it answers with one token and
// disaggregated_params naming itself, and marks its bootstrap room done.
func (f *fleet) addPrefill(t *testing.T, w prefillWorker) uint64 {
	t.Helper()
	rt := f.runtime(t)
	id := rt.InstanceID()
	if w.bootstrap {
		f.mu.Lock()
		f.boot[id] = 40000 + len(f.boot)
		f.mu.Unlock()
	}
	serve(t, rt, prefillEP, func(rc *runtime.Context, payload []byte, emit func([]byte) error) error {
		var req backend.Request
		if err := json.Unmarshal(payload, &req); err != nil {
			return err
		}
		f.mu.Lock()
		f.prefills = append(f.prefills, &req)
		f.mu.Unlock()
		if w.crash {
			rc.Kill() // like a crashed worker: the stream ends without its final marker
			return errors.New("crashed")
		}
		if w.block != nil {
			close(w.block)
			<-rc.Stopped()
			if w.stopped != nil {
				close(w.stopped)
			}
			return send(emit, backend.Cancelled())
		}
		out := backend.Length(7).WithUsage(len(req.TokenIDs), 1)
		out.CompletionUsage.PromptTokensDetails = &backend.PromptDetail{CachedTokens: 16}
		out.DisaggregatedParams, _ = json.Marshal(backend.DisaggregatedParams{WorkerID: &backend.PrefillWorker{PrefillWorkerID: id}})
		out.WorkerTraceLink = &telemetry.Link{TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: fmt.Sprintf("%016x", id)}
		if req.BootstrapInfo != nil {
			close(f.room(req.BootstrapInfo.Room))
		}
		return send(emit, out)
	})
	return id
}

// addDecode starts a decode worker: it waits for the bootstrap room of a
// request that carries one, then generates max_tokens tokens; with
// dropAfter > 0 its first stream breaks after that many tokens.
func (f *fleet) addDecode(t *testing.T) uint64 {
	t.Helper()
	rt := f.runtime(t)
	serve(t, rt, decodeEP, func(rc *runtime.Context, payload []byte, emit func([]byte) error) error {
		var req backend.Request
		if err := json.Unmarshal(payload, &req); err != nil {
			return err
		}
		f.mu.Lock()
		f.decodes = append(f.decodes, &req)
		f.mu.Unlock()
		if req.BootstrapInfo != nil {
			select {
			case <-f.room(req.BootstrapInfo.Room):
			case <-rc.Stopped():
				return send(emit, backend.Cancelled())
			case <-time.After(10 * time.Second):
				return send(emit, backend.Failed("bootstrap room never completed"))
			}
		}
		n := req.MaxTokens(4)
		for i := range n - 1 {
			if err := send(emit, backend.Tokens(uint32(100+i))); err != nil {
				return err
			}
		}
		return send(emit, backend.Length(uint32(100+n-1)))
	})
	return rt.InstanceID()
}

// client returns a client of ep that knows n instances.
func (f *fleet) client(t *testing.T, ep runtime.EndpointID, n int) *runtime.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cl, err := f.caller.Endpoint(ep).Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for {
		changed := cl.Changed()
		if len(cl.Available()) >= n {
			return cl
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("%s: discovered %d of %d workers", ep.Path(), len(cl.Available()), n)
		}
	}
}

// pool is the prefill workers as a prefill.Pool: a round-robin push
// router and the bootstrap ports.
type pool struct {
	*router.PushRouter
	f      *fleet
	policy router.Policy
}

func (f *fleet) pool(t *testing.T, n int) *pool {
	t.Helper()
	rr := &router.RoundRobin{}
	return &pool{PushRouter: router.New(f.client(t, prefillEP, n), rr, nil, nil), f: f, policy: rr}
}

func (p *pool) Pick(req *backend.Request) (*backend.Placement, error) {
	ids := p.Available()
	if len(ids) == 0 {
		return nil, router.ErrNoInstances
	}
	id, err := p.policy.Pick(req, ids)
	return &backend.Placement{WorkerID: id}, err
}

func (p *pool) Bootstrap(id uint64) (string, int, bool) {
	p.f.mu.Lock()
	defer p.f.mu.Unlock()
	port, ok := p.f.boot[id]
	return "127.0.0.1", port, ok
}

func (f *fleet) requests() (prefills, decodes []*backend.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*backend.Request(nil), f.prefills...), append([]*backend.Request(nil), f.decodes...)
}

// request is a prompt of n tokens asking for max tokens.
func request(n, max int) *backend.Request {
	ids := make([]uint32, n)
	for i := range ids {
		ids[i] = uint32(i + 1)
	}
	return &backend.Request{Model: "demo", TokenIDs: ids, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr(uint32(max))}}
}

// run sends req through g and returns its outputs.
func run(t *testing.T, g backend.Generator, req *backend.Request) ([]*backend.Output, error) {
	t.Helper()
	rc := runtime.NewContext(t.Context(), "")
	defer rc.Release()
	var outs []*backend.Output
	err := g.Generate(rc, req, func(out *backend.Output) error {
		outs = append(outs, new(*out)) // the router fills out again
		return nil
	})
	return outs, err
}
