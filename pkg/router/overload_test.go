package router_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/router"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/runtime/runtimetest"
)

// A worker that refuses a request because it is full (ResourceExhausted,
// a typed refusal on a live connection) is busy, not down: the router
// keeps routing to it, and it answers once it has room.
func TestFullWorkerIsNotReportedDown(t *testing.T) {
	f := newFleet(t, 0)
	worker := runtimetest.Start(t, runtime.Config{
		Discovery: runtime.DiscoveryMem, TCPHost: "127.0.0.1", InhibitDuration: time.Minute,
		SystemPort: runtime.SystemPortDisabled, GracePeriod: -1, WorkerPoolSize: 1,
	}, runtime.Deps{MemSpace: f.mem})
	id := worker.InstanceID()
	holding := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = worker.Endpoint(ep).Serve(ctx, runtime.HandlerFunc(func(rc *runtime.Context, payload []byte, emit func([]byte) error) error {
			var req backend.Request
			if err := json.Unmarshal(payload, &req); err == nil && req.MaxTokens(0) == 1 {
				holding <- struct{}{}
				<-rc.Done() // hold the only slot until killed
				return context.Cause(rc)
			}
			out := backend.Stop()
			out.ExtraArgs, _ = json.Marshal(id)
			b, _ := backend.AppendOutputJSON(nil, out)
			return emit(b)
		}))
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitInstances(t, t.Context(), f.client, 1)
	r := router.New(f.client, &router.RoundRobin{}, nil, nil)

	holder := runtime.NewContext(context.Background(), "")
	held := make(chan error, 1)
	one := uint32(1)
	go func() {
		hold := &backend.Request{StopConditions: backend.StopConditions{MaxTokens: &one}}
		held <- r.Generate(holder, hold, func(*backend.Output) error { return nil })
	}()
	<-holding
	if _, err := ask(t, r, nil); !errors.Is(err, runtime.ErrResourceExhausted) {
		t.Fatalf("a request to the full worker = %v, want ResourceExhausted", err)
	}
	if got := f.client.Available(); !slices.Equal(got, []uint64{id}) {
		t.Fatalf("after its refusal the router's available workers are %x, want the full worker %x", got, id)
	}
	holder.Kill()
	<-held
	holder.Release()
	testenv.WaitFor(t, 5*time.Second, "the freed worker to answer", func() bool {
		got, err := ask(t, r, nil)
		return err == nil && got == id
	})
}

// A worker reported down is skipped while another can take its requests;
// but when every worker of the endpoint has been reported down (acks that
// timed out on busy, live workers, say) while they are all still
// registered, the router routes over all of them rather than failing with
// "no instances": overload must not become an outage.
func TestEveryWorkerReportedDownStillRoutes(t *testing.T) {
	f := newFleet(t, 2)
	r := router.New(f.client, &router.RoundRobin{}, nil, nil)
	f.client.ReportInstanceDown(f.workers[0])
	for range 4 {
		if got, err := ask(t, r, nil); err != nil || got != f.workers[1] {
			t.Fatalf("with worker %x down: answered by %x, %v; want %x", f.workers[0], got, err, f.workers[1])
		}
	}
	f.client.ReportInstanceDown(f.workers[1])
	want := slices.Sorted(slices.Values(f.workers))
	if got := f.client.Available(); !slices.Equal(got, want) {
		t.Fatalf("with every worker reported down, available = %x, want all of %x", got, want)
	}
	seen := map[uint64]bool{}
	for range 4 {
		got, err := ask(t, r, nil)
		if err != nil {
			t.Fatalf("with every worker reported down: %v", err)
		}
		seen[got] = true
	}
	if len(seen) != 2 {
		t.Fatalf("with every worker reported down, answered by %v; want both", seen)
	}
}

// The router counts what it has in flight to each instance: a request
// from its send to its end, its prompt tokens until its first output; an
// instance that refused a request as full counts as Refusing for
// RefusalHold. It says when capacity frees (OnLoadChange).
func TestLoadsCountWhatIsInFlight(t *testing.T) {
	f := newFleet(t, 0)
	worker := runtimetest.Start(t, runtime.Config{
		Discovery: runtime.DiscoveryMem, TCPHost: "127.0.0.1", InhibitDuration: time.Minute,
		SystemPort: runtime.SystemPortDisabled, GracePeriod: -1, WorkerPoolSize: 1,
	}, runtime.Deps{MemSpace: f.mem})
	id := worker.InstanceID()
	holding, release := make(chan struct{}, 1), make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = worker.Endpoint(ep).Serve(ctx, runtime.HandlerFunc(func(rc *runtime.Context, _ []byte, emit func([]byte) error) error {
			holding <- struct{}{}
			<-release // the prefill
			b, _ := backend.AppendOutputJSON(nil, backend.Tokens(1))
			if err := emit(b); err != nil {
				return err
			}
			<-rc.Done() // the decode, until killed
			return context.Cause(rc)
		}))
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitInstances(t, t.Context(), f.client, 1)
	r := router.New(f.client, &router.RoundRobin{}, nil, nil)
	var changes atomic.Int32
	r.OnLoadChange(func() { changes.Add(1) })
	load := func() (router.Load, int) {
		l, routed := r.Loads([]uint64{id})
		return l[0], routed
	}

	holder := runtime.NewContext(context.Background(), "")
	held := make(chan error, 1)
	go func() {
		held <- r.Generate(holder, &backend.Request{TokenIDs: make([]uint32, 10)}, func(*backend.Output) error { return nil })
	}()
	<-holding
	if l, routed := load(); l != (router.Load{Requests: 1, PrefillTokens: 10}) || routed != 1 {
		t.Fatalf("in prefill: %+v, %d routed; want 1 request, 10 prefill tokens", l, routed)
	}
	close(release)
	testenv.WaitFor(t, 5*time.Second, "the first output to end the prefill count", func() bool {
		l, _ := load()
		return l == router.Load{Requests: 1}
	})
	if _, err := ask(t, r, nil); !errors.Is(err, runtime.ErrResourceExhausted) {
		t.Fatalf("a request to the full worker = %v, want ResourceExhausted", err)
	}
	if l, routed := load(); !l.Refusing || l.Requests != 1 || routed != 1 {
		t.Errorf("after its refusal: %+v, %d routed; want Refusing and the one request", l, routed)
	}
	holder.Kill()
	<-held
	holder.Release()
	if l, routed := load(); l.Requests != 0 || l.PrefillTokens != 0 || routed != 0 {
		t.Errorf("after the end: %+v, %d routed; want nothing in flight", l, routed)
	}
	testenv.WaitFor(t, 2*router.RefusalHold, "the refusal to be forgotten", func() bool {
		l, _ := load()
		return l == router.Load{}
	})
	if changes.Load() < 2 {
		t.Errorf("OnLoadChange called %d times, want at least at the first output and at the end", changes.Load())
	}
}
