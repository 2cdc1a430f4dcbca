package router_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/router"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
)

// A worker whose endpoint leaves discovery while it keeps serving (it
// failed a health check: runtime.Endpoint.SetHealthy) gets no requests
// from the push router until it is back.
func TestWithdrawnWorkerIsNotPicked(t *testing.T) {
	f := &fleet{mem: discovery.NewMemSpace()}
	var workers []*runtime.DistributedRuntime
	for range 2 {
		rt := f.runtime(t)
		id := rt.InstanceID()
		workers = append(workers, rt)
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
	waitInstances(t, ctx, cl, 2)
	r := router.New(cl, &router.RoundRobin{}, nil, nil)
	asked := func() map[uint64]int {
		seen := map[uint64]int{}
		for range 6 {
			id, err := ask(t, r, nil)
			if err != nil {
				t.Fatal(err)
			}
			seen[id]++
		}
		return seen
	}

	if err := workers[0].Endpoint(ep).SetHealthy(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "the router to drop the withdrawn worker", func() bool {
		return slices.Equal(r.Available(), f.workers[1:])
	})
	if seen := asked(); seen[f.workers[1]] != 6 {
		t.Fatalf("with worker %x withdrawn the router asked %v, want only %x", f.workers[0], seen, f.workers[1])
	}

	if err := workers[0].Endpoint(ep).SetHealthy(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "the router to take the worker back", func() bool { return len(r.Available()) == 2 })
	if seen := asked(); seen[f.workers[0]] != 3 || seen[f.workers[1]] != 3 {
		t.Fatalf("with both workers back round robin asked %v, want 3 each", seen)
	}
}
