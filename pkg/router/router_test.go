package router_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/router"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
	"github.com/dynamo-go/dynamo/pkg/runtime/runtimetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var ep = runtime.EndpointID{Namespace: "test", Component: "worker", Name: "generate"}

// fleet is n in-process workers (mem discovery, TCP request plane) that
// answer every request with their own instance id, and one caller.
type fleet struct {
	caller  *runtime.DistributedRuntime
	client  *runtime.Client
	workers []uint64
	mem     *discovery.MemSpace
}

func newFleet(t *testing.T, n int) *fleet {
	t.Helper()
	f := &fleet{mem: discovery.NewMemSpace()}
	for range n {
		rt := f.runtime(t)
		id := rt.InstanceID()
		f.workers = append(f.workers, id)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = rt.Endpoint(ep).Serve(ctx, runtime.HandlerFunc(func(_ *runtime.Context, _ []byte, emit func([]byte) error) error {
				out := backend.Stop()
				out.ExtraArgs, _ = json.Marshal(id)
				b, _ := backend.AppendOutputJSON(nil, out)
				return emit(b)
			}))
		}()
		t.Cleanup(func() { cancel(); <-done })
	}
	f.caller = f.runtime(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cl, err := f.caller.Endpoint(ep).Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitInstances(t, ctx, cl, n)
	f.client = cl
	return f
}

// waitInstances waits until cl discovered n instances. The channel is
// taken before the count is read, so no change is missed.
func waitInstances(t *testing.T, ctx context.Context, cl *runtime.Client, n int) {
	t.Helper()
	for {
		changed := cl.Changed()
		if len(cl.InstanceIDs()) >= n {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("discovered %d of %d workers", len(cl.InstanceIDs()), n)
		}
	}
}

func (f *fleet) runtime(t *testing.T) *runtime.DistributedRuntime {
	t.Helper()
	return runtimetest.Start(t, runtime.Config{
		Discovery: runtime.DiscoveryMem, TCPHost: "127.0.0.1", InhibitDuration: time.Minute,
		SystemPort: runtime.SystemPortDisabled, GracePeriod: -1,
	}, runtime.Deps{MemSpace: f.mem})
}

// ask routes req (nil: an empty request) and returns the id of the worker
// that answered. The outputs' Placement must name that worker.
func ask(t *testing.T, r *router.PushRouter, req *backend.Request) (uint64, error) {
	t.Helper()
	if req == nil {
		req = &backend.Request{}
	}
	rc := runtime.NewContext(t.Context(), "")
	defer rc.Release()
	var got uint64
	err := r.Generate(rc, req, func(out *backend.Output) error {
		if err := json.Unmarshal(out.ExtraArgs, &got); err != nil {
			return err
		}
		if out.Placement == nil || out.Placement.WorkerID != got {
			t.Errorf("worker %x answered; the output's placement says %+v", got, out.Placement)
		}
		return nil
	})
	return got, err
}

// pinned is a request that names its instance.
func pinned(id uint64) *backend.Request {
	return &backend.Request{Routing: &backend.Routing{BackendInstanceID: &id}}
}

func TestRoundRobinVisitsEveryWorkerInTurn(t *testing.T) {
	f := newFleet(t, 3)
	r := router.New(f.client, &router.RoundRobin{}, nil, nil)
	counts := map[uint64]int{}
	var seq []uint64
	for range 9 {
		id, err := ask(t, r, nil)
		if err != nil {
			t.Fatal(err)
		}
		counts[id]++
		seq = append(seq, id)
	}
	for _, w := range f.workers {
		if counts[w] != 3 {
			t.Fatalf("round robin counts = %v, want 3 each", counts)
		}
	}
	if seq[0] == seq[1] || seq[1] == seq[2] || seq[0] != seq[3] {
		t.Fatalf("round robin order = %x, want a repeating cycle", seq)
	}
}

func TestRandomReachesEveryWorker(t *testing.T) {
	f := newFleet(t, 3)
	r := router.New(f.client, router.Random{}, nil, nil)
	counts := map[uint64]int{}
	for range 90 {
		id, err := ask(t, r, nil)
		if err != nil {
			t.Fatal(err)
		}
		counts[id]++
	}
	for _, w := range f.workers {
		// P(a worker gets < 10 of 90) is about 1e-5.
		if counts[w] < 10 {
			t.Fatalf("random counts = %v: a worker was starved", counts)
		}
	}
}

func TestDirectHitsTheNamedWorker(t *testing.T) {
	f := newFleet(t, 3)
	r := router.New(f.client, router.Direct{}, nil, nil)
	for _, w := range f.workers {
		id, err := ask(t, r, pinned(w))
		if err != nil || id != w {
			t.Fatalf("direct to %x answered by %x, %v", w, id, err)
		}
	}
	if _, err := ask(t, r, pinned(0xbad)); !errors.Is(err, router.ErrTargetUnavailable) {
		t.Fatalf("direct to an unknown worker = %v, want ErrTargetUnavailable", err)
	}
	if _, err := ask(t, r, nil); !errors.Is(err, router.ErrNoTarget) {
		t.Fatalf("direct without a target = %v, want ErrNoTarget", err)
	}
}

func TestNoInstancesIsAClearError(t *testing.T) {
	f := newFleet(t, 0)
	r := router.New(f.client, &router.RoundRobin{}, nil, nil)
	_, err := ask(t, r, nil)
	if !errors.Is(err, router.ErrNoInstances) || err.Error() != "router: no instances found for endpoint test/worker/generate" {
		t.Fatalf("err = %v", err)
	}
}

// An instance that cannot be reached is reported down and skipped.
func TestUnreachableInstanceIsSkipped(t *testing.T) {
	f := newFleet(t, 1)
	// A ghost: registered, but nothing listens at its address.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := l.Addr().String()
	l.Close()
	ghost := f.mem.NewStore()
	defer ghost.Close()
	rec, _ := json.Marshal(runtime.Instance{Namespace: "test", Component: "worker", Endpoint: "generate", ID: ghost.ID(),
		Transport: runtime.Transport{TCP: dead + "/" + runtime.TCPRoutingKey(ep, ghost.ID())}})
	if err := ghost.Create(t.Context(), runtime.InstanceKey(ep, ghost.ID()), rec); err != nil {
		t.Fatal(err)
	}
	waitInstances(t, t.Context(), f.client, 2)
	r := router.New(f.client, &router.RoundRobin{}, nil, nil)
	failures := 0
	for range 6 {
		id, err := ask(t, r, nil)
		if err != nil {
			if !errors.Is(err, runtime.ErrCannotConnect) {
				t.Fatalf("call to the ghost = %v, want CannotConnect", err)
			}
			failures++
			continue
		}
		if id != f.workers[0] {
			t.Fatalf("answered by %x", id)
		}
	}
	if failures != 1 {
		t.Fatalf("%d calls failed; after the first failure the ghost must be skipped", failures)
	}
	if got := f.client.Available(); len(got) != 1 || got[0] != f.workers[0] {
		t.Fatalf("available = %x, want only the live worker", got)
	}
}
