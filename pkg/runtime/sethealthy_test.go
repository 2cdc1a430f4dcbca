package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// healthOf returns the status code and report of the worker's /health.
func healthOf(t *testing.T, worker *node) (int, runtime.HealthReport) {
	t.Helper()
	var addr string
	testenv.WaitFor(t, 5*time.Second, "the status server", func() bool { addr = worker.StatusAddr(); return addr != "" })
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rep runtime.HealthReport
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		t.Fatalf("/health body: %v", err)
	}
	return resp.StatusCode, rep
}

// An unhealthy endpoint leaves discovery and reports notready while its
// request plane keeps serving; healthy again, it is listed and called.
func TestSetHealthyWithdrawsAndRestoresTheInstance(t *testing.T) {
	setups := []setup{
		{runtime.DiscoveryEtcd, runtime.PlaneTCP},
		{runtime.DiscoveryFile, runtime.PlaneTCP},
		{runtime.DiscoveryMem, runtime.PlaneNATS},
	}
	forEach(t, setups, func(t *testing.T, c *cluster) {
		cfg := c.config()
		cfg.SystemHost, cfg.SystemPort = "127.0.0.1", 0
		worker := startRuntime(t, cfg, c.mem)
		serve(t, worker, newCounter())
		caller := c.start(t)
		cl := client(t, caller, 1)
		ep := worker.Endpoint(testEndpoint)
		id := worker.InstanceID()

		// A stream that runs while the endpoint leaves discovery ends
		// normally: only routing changes.
		type result struct {
			got []int
			err error
		}
		inflight := make(chan result, 1)
		first := make(chan struct{})
		go func() {
			got, err := collect(runtime.NewContext(t.Context(), ""), cl, id, countRequest{N: 50, DelayUS: 10_000}, func(n int) {
				if n == 0 {
					close(first)
				}
			})
			inflight <- result{got, err}
		}()
		<-first

		if err := ep.SetHealthy(t.Context(), false); err != nil {
			t.Fatalf("SetHealthy(false): %v", err)
		}
		if err := ep.SetHealthy(t.Context(), false); err != nil {
			t.Fatalf("SetHealthy(false) again: %v", err)
		}
		testenv.WaitFor(t, 10*time.Second, "the caller to drop the instance", func() bool { return len(cl.InstanceIDs()) == 0 })
		if kvs, err := caller.Store().List(t.Context(), runtime.InstancesBucket+"/"); err != nil || len(kvs) != 0 {
			t.Fatalf("instance records while unhealthy: %d, %v; want none", len(kvs), err)
		}
		if code, rep := healthOf(t, worker); code != http.StatusServiceUnavailable || rep.Status != "notready" || rep.Endpoints["generate"] != "notready" {
			t.Fatalf("/health while unhealthy = %d %+v, want 503 with generate notready", code, rep)
		}
		r := <-inflight
		if r.err != nil {
			t.Fatalf("the stream in flight: %v", r.err)
		}
		checkSequence(t, r.got, 50)

		if err := ep.SetHealthy(t.Context(), true); err != nil {
			t.Fatalf("SetHealthy(true): %v", err)
		}
		testenv.WaitFor(t, 10*time.Second, "the caller to list the instance again", func() bool { return len(cl.Available()) == 1 })
		if code, rep := healthOf(t, worker); code != http.StatusOK || rep.Endpoints["generate"] != "ready" {
			t.Fatalf("/health when healthy again = %d %+v, want 200 with generate ready", code, rep)
		}
		got, err := collect(runtime.NewContext(t.Context(), ""), cl, id, countRequest{N: 3}, nil)
		if err != nil {
			t.Fatalf("call after the endpoint came back: %v", err)
		}
		checkSequence(t, got, 3)
	})
}

// SetHealthy acts only while Serve serves the endpoint: a shutdown is
// never undone, and a withdrawn endpoint shuts down cleanly.
func TestSetHealthyOnlyWhileServing(t *testing.T) {
	c := newCluster(t, setup{runtime.DiscoveryMem, runtime.PlaneTCP})
	worker := c.start(t)
	ep := worker.Endpoint(testEndpoint)
	if err := ep.SetHealthy(t.Context(), true); !errors.Is(err, runtime.ErrNotServing) {
		t.Fatalf("SetHealthy before Serve = %v, want ErrNotServing", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ep.Serve(ctx, newCounter()) }()
	testenv.WaitFor(t, 10*time.Second, "Serve to register", func() bool { return ep.SetHealthy(t.Context(), false) == nil })
	if kvs, _ := worker.Store().List(t.Context(), runtime.InstancesBucket+"/"); len(kvs) != 0 {
		t.Fatalf("%d instance records after SetHealthy(false), want 0", len(kvs))
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve of a withdrawn endpoint = %v, want a clean stop", err)
	}
	if err := ep.SetHealthy(t.Context(), true); !errors.Is(err, runtime.ErrNotServing) {
		t.Fatalf("SetHealthy after Serve returned = %v, want ErrNotServing", err)
	}
	if kvs, _ := worker.Store().List(t.Context(), runtime.InstancesBucket+"/"); len(kvs) != 0 {
		t.Fatalf("%d instance records after the shutdown, want 0", len(kvs))
	}
}
