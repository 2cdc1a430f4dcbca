package runtime_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

func TestRegisterDiscoverCallStreamsInOrder(t *testing.T) {
	forEach(t, matrix, func(t *testing.T, c *cluster) {
		worker, caller := c.start(t), c.start(t)
		h := newCounter()
		serve(t, worker, h)
		cl := client(t, caller, 1)
		if got := cl.InstanceIDs(); got[0] != worker.InstanceID() {
			t.Fatalf("discovered instance %x, want the worker's lease id %x", got[0], worker.InstanceID())
		}
		rc := runtime.NewContext(t.Context(), "req-10k")
		got, err := collect(rc, cl, worker.InstanceID(), countRequest{N: 10000}, nil)
		if err != nil {
			t.Fatalf("Call: %v", err)
		}
		checkSequence(t, got, 10000)
		if id := <-h.started; id != "req-10k" {
			t.Fatalf("worker saw request id %q, want the caller's", id)
		}
	})
}

func TestCallerStopReachesWorker(t *testing.T) {
	forEach(t, matrix[:4], func(t *testing.T, c *cluster) {
		worker, caller := c.start(t), c.start(t)
		h := newCounter()
		serve(t, worker, h)
		cl := client(t, caller, 1)
		rc := runtime.NewContext(t.Context(), "stop-me")
		got, err := collect(rc, cl, worker.InstanceID(), countRequest{N: 1_000_000, DelayUS: 200}, func(n int) {
			if n == 10 {
				rc.Stop()
			}
		})
		if err != nil {
			t.Fatalf("a stopped stream must end cleanly, got %v", err)
		}
		if len(got) < 11 || len(got) > 100_000 {
			t.Fatalf("got %d items after stopping at 10", len(got))
		}
		testenv.WaitFor(t, 5*time.Second, "the worker to see the stop", func() bool {
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.sawStop["stop-me"]
		})
	})
}

func TestCallerKillReachesWorker(t *testing.T) {
	forEach(t, matrix[:4], func(t *testing.T, c *cluster) {
		worker, caller := c.start(t), c.start(t)
		h := newCounter()
		serve(t, worker, h)
		cl := client(t, caller, 1)
		rc := runtime.NewContext(t.Context(), "kill-me")
		start := time.Now()
		_, err := collect(rc, cl, worker.InstanceID(), countRequest{N: 1_000_000, DelayUS: 200}, func(n int) {
			if n == 10 {
				rc.Kill()
			}
		})
		if !errors.Is(err, runtime.ErrKilled) {
			t.Fatalf("Call after kill = %v, want ErrKilled", err)
		}
		testenv.WaitFor(t, 5*time.Second, "the worker to see the kill", func() bool {
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.sawKill["kill-me"]
		})
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("kill took %s to end the stream", d)
		}
	})
}

func TestConsumerErrorKillsWorker(t *testing.T) {
	c := newCluster(t, setup{runtime.DiscoveryMem, runtime.PlaneTCP})
	worker, caller := c.start(t), c.start(t)
	h := newCounter()
	serve(t, worker, h)
	cl := client(t, caller, 1)
	rc := runtime.NewContext(t.Context(), "consumer-gone")
	n := 0
	err := cl.Call(rc, worker.InstanceID(), []byte(`{"n":1000000,"delay_us":200}`), func([]byte) error {
		if n++; n == 5 {
			return errTest
		}
		return nil
	})
	if !errors.Is(err, errTest) {
		t.Fatalf("Call = %v, want the consumer's error", err)
	}
	testenv.WaitFor(t, 5*time.Second, "the worker to be killed when the consumer is gone", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.sawKill["consumer-gone"]
	})
}

func TestHandlerErrorsKeepTheirType(t *testing.T) {
	forEach(t, []setup{{runtime.DiscoveryMem, runtime.PlaneTCP}, {runtime.DiscoveryMem, runtime.PlaneNATS}}, func(t *testing.T, c *cluster) {
		worker, caller := c.start(t), c.start(t)
		serve(t, worker, newCounter())
		cl := client(t, caller, 1)

		_, err := collect(runtime.NewContext(t.Context(), ""), cl, worker.InstanceID(), countRequest{N: 5, FailNow: string(runtime.TypeInvalidArgument)}, nil)
		if !errors.Is(err, runtime.ErrInvalidArgument) {
			t.Fatalf("failed start = %v, want InvalidArgument through the prologue", err)
		}
		got, err := collect(runtime.NewContext(t.Context(), ""), cl, worker.InstanceID(), countRequest{N: 100, FailAt: 7}, nil)
		if !errors.Is(err, runtime.ErrEngineShutdown) {
			t.Fatalf("error item = %v, want EngineShutdown", err)
		}
		checkSequence(t, got, 7)
		_, err = collect(runtime.NewContext(t.Context(), ""), cl, 0xdead, countRequest{N: 1}, nil)
		if !errors.Is(err, runtime.ErrCannotConnect) || !errors.Is(err, runtime.ErrUnknownInstance) {
			t.Fatalf("unknown instance = %v, want CannotConnect", err)
		}
	})
}

func TestManyConcurrentStreamsInterleave(t *testing.T) {
	forEach(t, []setup{{runtime.DiscoveryEtcd, runtime.PlaneTCP}, {runtime.DiscoveryEtcd, runtime.PlaneNATS}}, func(t *testing.T, c *cluster) {
		worker, caller := c.start(t), c.start(t)
		serve(t, worker, newCounter())
		cl := client(t, caller, 1)
		const streams, items = 64, 500
		var wg sync.WaitGroup
		errs := make(chan error, streams)
		results := make([][]int, streams)
		for i := range streams {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := collect(runtime.NewContext(context.Background(), ""), cl, worker.InstanceID(), countRequest{N: items, DelayUS: 50}, nil)
				results[i] = got
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("concurrent call: %v", err)
			}
		}
		for _, got := range results {
			checkSequence(t, got, items)
		}
	})
}

func TestCleanShutdownDrainsAndUnregisters(t *testing.T) {
	forEach(t, []setup{{runtime.DiscoveryEtcd, runtime.PlaneTCP}, {runtime.DiscoveryFile, runtime.PlaneNATS}}, func(t *testing.T, c *cluster) {
		worker, caller := c.start(t), c.start(t)
		serve(t, worker, newCounter())
		cl := client(t, caller, 1)
		id := worker.InstanceID()

		// A stream in flight when the worker shuts down finishes in full.
		inFlight := make(chan error, 1)
		var got []int
		started := make(chan struct{})
		go func() {
			var err error
			got, err = collect(runtime.NewContext(context.Background(), ""), cl, id, countRequest{N: 300, DelayUS: 3000}, func(n int) {
				if n == 0 {
					close(started)
				}
			})
			inFlight <- err
		}()
		<-started
		stopped := make(chan error, 1)
		go func() { stopped <- worker.stop(t) }()
		testenv.WaitFor(t, 2*time.Second, "the instance to leave discovery at once", func() bool { return len(cl.InstanceIDs()) == 0 })
		if err := <-inFlight; err != nil {
			t.Fatalf("in-flight stream during shutdown: %v", err)
		}
		checkSequence(t, got, 300)
		if err := <-stopped; err != nil {
			t.Fatalf("Run after clean shutdown = %v", err)
		}
		_, err := collect(runtime.NewContext(t.Context(), ""), cl, id, countRequest{N: 1}, nil)
		if !errors.Is(err, runtime.ErrCannotConnect) {
			t.Fatalf("call after shutdown = %v, want CannotConnect", err)
		}
	})
}

// A worker that refuses a request says why, and the type survives: a full
// worker is ResourceExhausted (not an instance fault: it is busy, not
// gone); an item too large for a frame fails the handler's emit.
func TestWorkerRefusalsKeepTheirType(t *testing.T) {
	forEach(t, []setup{{runtime.DiscoveryMem, runtime.PlaneTCP}, {runtime.DiscoveryMem, runtime.PlaneNATS}}, func(t *testing.T, c *cluster) {
		cfg := c.config()
		cfg.WorkerPoolSize = 1
		cfg.MaxMessageSize = 4096
		worker := startRuntime(t, cfg, c.mem)
		holding := make(chan struct{}, 1)
		big := runtime.HandlerFunc(func(rc *runtime.Context, payload []byte, emit func([]byte) error) error {
			if string(payload) == `"big"` {
				return emit([]byte(`"` + strings.Repeat("x", 5000) + `"`))
			}
			holding <- struct{}{}
			<-rc.Done() // hold the only slot until killed
			return context.Cause(rc)
		})
		serve(t, worker, big)
		caller := c.start(t)
		cl := client(t, caller, 1)
		id := worker.InstanceID()

		holder := runtime.NewContext(context.Background(), "")
		held := make(chan error, 1)
		go func() { held <- cl.Call(holder, id, []byte(`"hold"`), func([]byte) error { return nil }) }()
		<-holding
		second, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		err := cl.Call(runtime.NewContext(second, ""), id, []byte(`"hold"`), func([]byte) error { return nil })
		if !errors.Is(err, runtime.ErrResourceExhausted) || runtime.IsInstanceFault(err) {
			t.Fatalf("call to a full worker = %v, want ResourceExhausted and no instance fault", err)
		}
		holder.Kill()
		<-held
		// The worker frees the slot a moment after the caller saw the kill.
		testenv.WaitFor(t, 5*time.Second, "the slot to be free", func() bool {
			err = cl.Call(runtime.NewContext(t.Context(), ""), id, []byte(`"big"`), func([]byte) error { return nil })
			return !errors.Is(err, runtime.ErrResourceExhausted)
		})
		if !errors.Is(err, runtime.ErrInvalidArgument) || !strings.Contains(err.Error(), "frame limit") {
			t.Fatalf("oversized item = %v, want InvalidArgument about the frame limit", err)
		}
	})
}

// A caller whose context ends before its request got through (a batch
// request whose sibling failed, a client that left) gets its context's
// error, not CannotConnect: the instance did nothing wrong and must not be
// reported down for it.
func TestCallerCancelledBeforeSendIsNotAnInstanceFault(t *testing.T) {
	forEach(t, matrix[:1], func(t *testing.T, c *cluster) {
		worker, caller := c.start(t), c.start(t)
		serve(t, worker, newCounter())
		cl := client(t, caller, 1)
		ctx, cancel := context.WithCancel(t.Context())
		rc := runtime.NewContext(ctx, "gave-up")
		cancel()
		_, err := collect(rc, cl, worker.InstanceID(), countRequest{N: 3}, nil)
		if !errors.Is(err, context.Canceled) || runtime.IsInstanceFault(err) {
			t.Fatalf("Call with a cancelled context: %v (instance fault %v), want context.Canceled and no instance fault", err, runtime.IsInstanceFault(err))
		}
	})
}
