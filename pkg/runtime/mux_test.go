package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// Response-stream multiplexing (docs/protocol.md §7.8): the tests below
// run with it on (the default) unless they turn it off on one side to play
// a classic peer.

// tagRequest asks the tagged handler for n items [tag, i].
type tagRequest struct {
	Tag     int `json:"tag"`
	N       int `json:"n"`
	DelayUS int `json:"delay_us,omitempty"`
}

// tagged streams the items [tag, 0] .. [tag, n-1], so that a caller can
// tell every stream's items apart, and records per tag how many it sent
// and whether it saw a stop or a kill.
type tagged struct {
	mu     sync.Mutex
	sent   map[int]int
	stop   map[int]bool
	killed map[int]error
}

func newTagged() *tagged {
	return &tagged{sent: map[int]int{}, stop: map[int]bool{}, killed: map[int]error{}}
}

func (h *tagged) Handle(rc *runtime.Context, payload []byte, emit func([]byte) error) error {
	var req tagRequest
	if err := json.Unmarshal(payload, &req); err != nil {
		return runtime.NewError(runtime.TypeInvalidArgument, "bad request: %v", err)
	}
	for i := range req.N {
		if rc.IsKilled() {
			h.mu.Lock()
			h.killed[req.Tag] = context.Cause(rc)
			h.mu.Unlock()
			return context.Cause(rc)
		}
		if rc.IsStopped() {
			// A kill that lands after the IsKilled check above is a
			// kill, not a stop (a killed context is stopped too).
			h.mu.Lock()
			if rc.IsKilled() {
				h.killed[req.Tag] = context.Cause(rc)
				h.mu.Unlock()
				return context.Cause(rc)
			}
			h.stop[req.Tag] = true
			h.mu.Unlock()
			return nil
		}
		if err := emit(fmt.Appendf(nil, "[%d,%d]", req.Tag, i)); err != nil {
			h.mu.Lock()
			if rc.IsKilled() {
				h.killed[req.Tag] = context.Cause(rc)
			}
			h.mu.Unlock()
			return err
		}
		h.mu.Lock()
		h.sent[req.Tag]++
		h.mu.Unlock()
		if req.DelayUS > 0 {
			time.Sleep(time.Duration(req.DelayUS) * time.Microsecond)
		}
	}
	return nil
}

func (h *tagged) sentOf(tag int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sent[tag]
}

func (h *tagged) killedWith(tag int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.killed[tag]
}

// collectTagged calls with req and returns the indexes received; every
// item must carry req's tag and come in order.
func collectTagged(rc *runtime.Context, cl *runtime.Client, id uint64, req tagRequest, onItem func(i int)) (int, error) {
	payload, _ := json.Marshal(req)
	n := 0
	err := cl.Call(rc, id, payload, func(item []byte) error {
		var v [2]int
		if err := json.Unmarshal(item, &v); err != nil {
			return err
		}
		if v[0] != req.Tag || v[1] != n {
			return fmt.Errorf("stream %d got item %v, want [%d %d]", req.Tag, v, req.Tag, n)
		}
		n++
		if onItem != nil {
			onItem(v[1])
		}
		return nil
	})
	return n, err
}

func sharedConns(t *testing.T, caller, worker *node) (accepted, dialled int) {
	t.Helper()
	accepted, _ = runtime.SharedConns(caller.DistributedRuntime)
	_, dialled = runtime.SharedConns(worker.DistributedRuntime)
	return accepted, dialled
}

// Every combination of a caller and a worker that do and do not speak the
// shared-connection protocol works, over both request planes: the classic
// side's peer falls back to a connection per stream.
func TestResponseMuxCompatibility(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		callerOff, workerOff bool
	}{
		{"new caller, new worker", false, false},
		{"new caller, classic worker", false, true},
		{"classic caller, new worker", true, false},
		{"classic caller, classic worker", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEach(t, []setup{{runtime.DiscoveryMem, runtime.PlaneTCP}, {runtime.DiscoveryMem, runtime.PlaneNATS}}, func(t *testing.T, c *cluster) {
				wcfg, ccfg := c.config(), c.config()
				wcfg.DisableResponseMux, ccfg.DisableResponseMux = tc.workerOff, tc.callerOff
				worker, caller := startRuntime(t, wcfg, c.mem), startRuntime(t, ccfg, c.mem)
				h := newCounter()
				serve(t, worker, h)
				cl := client(t, caller, 1)
				id := worker.InstanceID()

				for range 20 {
					got, err := collect(runtime.NewContext(t.Context(), ""), cl, id, countRequest{N: 100}, nil)
					if err != nil {
						t.Fatalf("Call: %v", err)
					}
					checkSequence(t, got, 100)
				}
				if _, err := collect(runtime.NewContext(t.Context(), ""), cl, id, countRequest{N: 5, FailNow: string(runtime.TypeInvalidArgument)}, nil); !errors.Is(err, runtime.ErrInvalidArgument) {
					t.Fatalf("failed start = %v, want InvalidArgument", err)
				}
				got, err := collect(runtime.NewContext(t.Context(), ""), cl, id, countRequest{N: 100, FailAt: 7}, nil)
				if !errors.Is(err, runtime.ErrEngineShutdown) {
					t.Fatalf("error item = %v, want EngineShutdown", err)
				}
				checkSequence(t, got, 7)

				stop := runtime.NewContext(t.Context(), "compat-stop")
				got, err = collect(stop, cl, id, countRequest{N: 1_000_000, DelayUS: 200}, func(n int) {
					if n == 10 {
						stop.Stop()
					}
				})
				if err != nil || len(got) < 11 {
					t.Fatalf("stopped stream: %d items, %v; want a clean early end", len(got), err)
				}
				kill := runtime.NewContext(t.Context(), "compat-kill")
				if _, err := collect(kill, cl, id, countRequest{N: 1_000_000, DelayUS: 200}, func(n int) {
					if n == 10 {
						kill.Kill()
					}
				}); !errors.Is(err, runtime.ErrKilled) {
					t.Fatalf("killed stream = %v, want ErrKilled", err)
				}
				testenv.WaitFor(t, 5*time.Second, "the worker to see the stop and the kill", func() bool {
					h.mu.Lock()
					defer h.mu.Unlock()
					return h.sawStop["compat-stop"] && h.sawKill["compat-kill"]
				})

				want := 0
				if !tc.callerOff && !tc.workerOff {
					want = 1 // all of these calls shared one connection
				}
				if a, d := sharedConns(t, caller, worker); a != want || d != want {
					t.Fatalf("shared connections: caller accepted %d, worker dialled %d; want %d each", a, d, want)
				}
			})
		})
	}
}

// 200 concurrent streams over one shared connection: every stream gets
// exactly its own items, in order.
func TestSharedConnectionCarriesManyStreams(t *testing.T) {
	c := newCluster(t, setup{runtime.DiscoveryMem, runtime.PlaneTCP})
	worker, caller := c.start(t), c.start(t)
	serve(t, worker, newTagged())
	cl := client(t, caller, 1)
	const streams, items = 200, 300
	var wg sync.WaitGroup
	errs := make([]error, streams)
	counts := make([]int, streams)
	for tag := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			counts[tag], errs[tag] = collectTagged(runtime.NewContext(t.Context(), ""), cl, worker.InstanceID(), tagRequest{Tag: tag, N: items, DelayUS: 100}, nil)
		}()
	}
	wg.Wait()
	for tag := range streams {
		if errs[tag] != nil || counts[tag] != items {
			t.Fatalf("stream %d: %d items, %v; want %d, nil", tag, counts[tag], errs[tag], items)
		}
	}
	if a, d := sharedConns(t, caller, worker); a != 1 || d != 1 {
		t.Fatalf("shared connections: caller accepted %d, worker dialled %d; want 1 each", a, d)
	}
}

// Stopping one stream and killing another leaves the streams that share
// their connection untouched.
func TestStopAndKillSpareTheirNeighbours(t *testing.T) {
	c := newCluster(t, setup{runtime.DiscoveryMem, runtime.PlaneTCP})
	worker, caller := c.start(t), c.start(t)
	h := newTagged()
	serve(t, worker, h)
	cl := client(t, caller, 1)
	const streams, items, stopTag, killTag = 10, 2000, 5, 3
	var wg sync.WaitGroup
	errs := make([]error, streams)
	counts := make([]int, streams)
	for tag := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rc := runtime.NewContext(t.Context(), "")
			counts[tag], errs[tag] = collectTagged(rc, cl, worker.InstanceID(), tagRequest{Tag: tag, N: items, DelayUS: 200}, func(i int) {
				switch {
				case i == 20 && tag == stopTag:
					rc.Stop()
				case i == 20 && tag == killTag:
					rc.Kill()
				}
			})
		}()
	}
	wg.Wait()
	for tag := range streams {
		switch tag {
		case killTag:
			if !errors.Is(errs[tag], runtime.ErrKilled) {
				t.Errorf("killed stream = %v, want ErrKilled", errs[tag])
			}
		case stopTag:
			if errs[tag] != nil || counts[tag] < 21 || counts[tag] == items {
				t.Errorf("stopped stream: %d items, %v; want a clean early end", counts[tag], errs[tag])
			}
		default:
			if errs[tag] != nil || counts[tag] != items {
				t.Errorf("neighbour %d: %d items, %v; want %d, nil", tag, counts[tag], errs[tag], items)
			}
		}
	}
	testenv.WaitFor(t, 5*time.Second, "the worker to see the stop and the kill", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.stop[stopTag] && errors.Is(h.killed[killTag], runtime.ErrKilled)
	})
}

// A consumer that does not take its items holds back only its own stream:
// the worker's emit for it waits once the stream's window is used up,
// while another stream on the same connection runs to its end. When the
// consumer resumes, its stream completes, in order.
func TestSlowConsumerStallsOnlyItsStream(t *testing.T) {
	c := newCluster(t, setup{runtime.DiscoveryMem, runtime.PlaneTCP})
	cfg := c.config()
	cfg.ResponseStreamWindow = 8 << 10
	worker, caller := startRuntime(t, cfg, c.mem), startRuntime(t, cfg, c.mem)
	h := newTagged()
	serve(t, worker, h)
	cl := client(t, caller, 1)
	const slowTag, fastTag, slowItems, fastItems = 1, 2, 5000, 20000

	release := make(chan struct{})
	slow := make(chan error, 1)
	var slowCount int
	go func() {
		var err error
		slowCount, err = collectTagged(runtime.NewContext(t.Context(), ""), cl, worker.InstanceID(), tagRequest{Tag: slowTag, N: slowItems}, func(i int) {
			if i == 0 {
				<-release
			}
		})
		slow <- err
	}()
	testenv.WaitFor(t, 5*time.Second, "the slow stream to start", func() bool { return h.sentOf(slowTag) > 0 })

	n, err := collectTagged(runtime.NewContext(t.Context(), ""), cl, worker.InstanceID(), tagRequest{Tag: fastTag, N: fastItems}, nil)
	if err != nil || n != fastItems {
		t.Fatalf("stream next to a stalled one: %d items, %v; want %d, nil", n, err, fastItems)
	}
	t.Logf("the worker sent %d items to the stalled consumer meanwhile", h.sentOf(slowTag))
	// Each item costs about 80 bytes of an 8 KiB window: the worker must
	// be held back after about a hundred.
	if sent := h.sentOf(slowTag); sent > 400 {
		t.Fatalf("the worker sent %d items to a consumer that took none; want it held back by the window", sent)
	}
	if a, d := sharedConns(t, caller, worker); a != 1 || d != 1 {
		t.Fatalf("shared connections: caller accepted %d, worker dialled %d; want 1 each", a, d)
	}
	close(release)
	select {
	case err := <-slow:
		if err != nil || slowCount != slowItems {
			t.Fatalf("slow stream after it resumed: %d items, %v; want %d, nil", slowCount, err, slowItems)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the slow stream did not finish after its consumer resumed")
	}
}

// A shared connection that breaks fails every stream it carried with the
// error a broken classic stream gets (so migration re-issues them), kills
// their requests on the worker, and the next call dials a new connection.
func TestBrokenSharedConnectionFailsItsStreams(t *testing.T) {
	c := newCluster(t, setup{runtime.DiscoveryMem, runtime.PlaneTCP})
	worker, caller := c.start(t), c.start(t)
	h := newTagged()
	serve(t, worker, h)
	cl := client(t, caller, 1)
	const streams = 5
	var started, wg sync.WaitGroup
	started.Add(streams)
	errs := make([]error, streams)
	for tag := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[tag] = collectTagged(runtime.NewContext(t.Context(), ""), cl, worker.InstanceID(), tagRequest{Tag: tag, N: 1_000_000, DelayUS: 1000}, func(i int) {
				if i == 10 {
					started.Done()
				}
			})
		}()
	}
	started.Wait()
	runtime.BreakSharedConns(caller.DistributedRuntime)
	wg.Wait()
	for tag, err := range errs {
		if !errors.Is(err, runtime.ErrDisconnected) || !strings.Contains(err.Error(), runtime.MsgStreamEnded) || !runtime.IsInstanceFault(err) {
			t.Errorf("stream %d on the broken connection = %v, want Disconnected: %s", tag, err, runtime.MsgStreamEnded)
		}
	}
	testenv.WaitFor(t, 5*time.Second, "the worker to kill the broken connection's requests", func() bool {
		for tag := range streams {
			if !errors.Is(h.killedWith(tag), runtime.ErrCallerGone) {
				return false
			}
		}
		return true
	})
	n, err := collectTagged(runtime.NewContext(t.Context(), ""), cl, worker.InstanceID(), tagRequest{Tag: 99, N: 50}, nil)
	if err != nil || n != 50 {
		t.Fatalf("call after the break: %d items, %v", n, err)
	}
	if a, d := sharedConns(t, caller, worker); a != 1 || d != 1 {
		t.Fatalf("shared connections after the break: caller accepted %d, worker dialled %d; want 1 each", a, d)
	}
}

// A shared connection without streams is closed after the idle timeout,
// and the next call dials a new one.
func TestIdleSharedConnectionIsClosed(t *testing.T) {
	c := newCluster(t, setup{runtime.DiscoveryMem, runtime.PlaneTCP})
	wcfg := c.config()
	wcfg.ResponseMuxIdleTimeout = 300 * time.Millisecond
	worker, caller := startRuntime(t, wcfg, c.mem), c.start(t)
	serve(t, worker, newTagged())
	cl := client(t, caller, 1)
	call := func() {
		t.Helper()
		if n, err := collectTagged(runtime.NewContext(t.Context(), ""), cl, worker.InstanceID(), tagRequest{Tag: 1, N: 10}, nil); err != nil || n != 10 {
			t.Fatalf("call: %d items, %v", n, err)
		}
	}
	call()
	if a, d := sharedConns(t, caller, worker); a != 1 || d != 1 {
		t.Fatalf("shared connections: caller accepted %d, worker dialled %d; want 1 each", a, d)
	}
	testenv.WaitFor(t, 5*time.Second, "the idle connection to close on both sides", func() bool {
		a, d := sharedConns(t, caller, worker)
		return a == 0 && d == 0
	})
	call()
	if a, d := sharedConns(t, caller, worker); a != 1 || d != 1 {
		t.Fatalf("shared connections after a new call: caller accepted %d, worker dialled %d; want 1 each", a, d)
	}
}

// A request killed by the worker's drain deadline at shutdown ends its
// caller's call Disconnected, an instance fault that migration re-issues:
// on a shared connection (the worker resets the stream) as on a classic
// one (the worker closes the connection).
func TestDrainDeadlineEndsStreamDisconnected(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("mux off=%v", off), func(t *testing.T) {
			c := newCluster(t, setup{runtime.DiscoveryMem, runtime.PlaneTCP})
			wcfg := c.config()
			wcfg.DrainTimeout = 300 * time.Millisecond
			wcfg.DisableResponseMux = off
			worker, caller := startRuntime(t, wcfg, c.mem), c.start(t)
			h := newTagged()
			serve(t, worker, h)
			cl := client(t, caller, 1)
			started := make(chan struct{})
			result := make(chan error, 1)
			go func() {
				_, err := collectTagged(runtime.NewContext(t.Context(), ""), cl, worker.InstanceID(), tagRequest{Tag: 1, N: 1_000_000, DelayUS: 1000}, func(i int) {
					if i == 0 {
						close(started)
					}
				})
				result <- err
			}()
			<-started
			go func() { _ = worker.stop(t) }()
			select {
			case err := <-result:
				if !errors.Is(err, runtime.ErrDisconnected) || !strings.Contains(err.Error(), runtime.MsgStreamEnded) || !runtime.IsInstanceFault(err) {
					t.Fatalf("stream killed by the drain deadline = %v, want Disconnected: %s", err, runtime.MsgStreamEnded)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("the stream did not end within 15s of the worker's shutdown")
			}
			if err := h.killedWith(1); !errors.Is(err, runtime.ErrEngineShutdown) {
				t.Fatalf("worker-side cause = %v, want EngineShutdown", err)
			}
		})
	}
}
