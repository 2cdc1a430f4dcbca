package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
)

// cluster is the shared infrastructure of one test: real etcd and NATS
// servers, a file-store directory, a mem space.
type cluster struct {
	discovery, plane string
	etcd             *testenv.Etcd
	nats             *testenv.NATS
	dir              string
	mem              *discovery.MemSpace
	ttl              time.Duration
}

type setup struct{ discovery, plane string }

// matrix is every discovery back-end with every request plane.
var matrix = []setup{
	{runtime.DiscoveryEtcd, runtime.PlaneTCP},
	{runtime.DiscoveryEtcd, runtime.PlaneNATS},
	{runtime.DiscoveryFile, runtime.PlaneTCP},
	{runtime.DiscoveryFile, runtime.PlaneNATS},
	{runtime.DiscoveryMem, runtime.PlaneTCP},
	{runtime.DiscoveryMem, runtime.PlaneNATS},
}

func (s setup) String() string { return s.discovery + "+" + s.plane }

// forEach runs f as a subtest for every setup of the matrix.
func forEach(t *testing.T, setups []setup, f func(t *testing.T, c *cluster)) {
	for _, s := range setups {
		t.Run(s.String(), func(t *testing.T) { f(t, newCluster(t, s)) })
	}
}

func newCluster(t *testing.T, s setup) *cluster {
	t.Helper()
	c := &cluster{discovery: s.discovery, plane: s.plane, ttl: 10 * time.Second}
	switch s.discovery {
	case runtime.DiscoveryEtcd:
		c.etcd = testenv.StartEtcd(t)
	case runtime.DiscoveryFile:
		c.dir = t.TempDir()
	case runtime.DiscoveryMem:
		c.mem = discovery.NewMemSpace()
	}
	if s.plane == runtime.PlaneNATS {
		c.nats = testenv.StartNATS(t)
	}
	return c
}

func (c *cluster) config() runtime.Config {
	cfg := runtime.Config{
		Discovery:          c.discovery,
		RequestPlane:       c.plane,
		FileDir:            c.dir,
		LeaseTTL:           c.ttl,
		TCPHost:            "127.0.0.1",
		ResponseStreamHost: "127.0.0.1",
		ConnectTimeout:     20 * time.Second,
		DrainTimeout:       5 * time.Second,
		GracePeriod:        200 * time.Millisecond,
		SystemPort:         runtime.SystemPortDisabled,
	}
	if c.etcd != nil {
		cfg.EtcdEndpoints = []string{c.etcd.URL}
	}
	if c.nats != nil {
		cfg.NATSServer = c.nats.URL
	}
	return cfg
}

// env is the configuration of a worker subprocess (see TestMain).
func (c *cluster) env() []string {
	cfg := c.config()
	env := []string{
		"RUNTIME_TEST_DISCOVERY=" + cfg.Discovery,
		"RUNTIME_TEST_PLANE=" + cfg.RequestPlane,
		"RUNTIME_TEST_FILE_DIR=" + cfg.FileDir,
		"RUNTIME_TEST_TTL=" + cfg.LeaseTTL.String(),
	}
	if c.etcd != nil {
		env = append(env, "RUNTIME_TEST_ETCD="+c.etcd.URL)
	}
	if c.nats != nil {
		env = append(env, "RUNTIME_TEST_NATS="+c.nats.URL)
	}
	return env
}

// node is one runtime under test, running until the test ends.
type node struct {
	*runtime.DistributedRuntime
	cancel context.CancelFunc
	done   chan error
}

// start creates a runtime and runs it; it is shut down when the test ends.
func (c *cluster) start(t *testing.T) *node {
	t.Helper()
	return startRuntime(t, c.config(), c.mem)
}

func startRuntime(t *testing.T, cfg runtime.Config, mem *discovery.MemSpace) *node {
	t.Helper()
	rt, err := runtime.New(t.Context(), cfg, runtime.Deps{MemSpace: mem})
	if err != nil {
		t.Fatalf("runtime.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &node{DistributedRuntime: rt, cancel: cancel, done: make(chan error, 1)}
	go func() { n.done <- rt.Run(ctx) }()
	t.Cleanup(func() { n.stop(t) })
	return n
}

// stop ends Run (ordered shutdown) and waits for it.
func (n *node) stop(t *testing.T) error {
	t.Helper()
	n.cancel()
	select {
	case err, ok := <-n.done:
		if ok {
			close(n.done)
		}
		return err
	case <-time.After(30 * time.Second):
		t.Errorf("runtime did not stop within 30s")
		return nil
	}
}

var testEndpoint = runtime.EndpointID{Namespace: "test", Component: "worker", Name: "generate"}

// serve serves h on the test endpoint until the test ends and waits until
// the client of `caller` sees the instance.
func serve(t *testing.T, worker *node, h runtime.Handler) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- worker.Endpoint(testEndpoint).Serve(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}

// client returns the caller's client, after it discovered want instances.
func client(t *testing.T, caller *node, want int) *runtime.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cl, err := caller.Endpoint(testEndpoint).Client(ctx)
	if err != nil {
		t.Fatalf("Client: %v", err)
	}
	testenv.WaitFor(t, 20*time.Second, fmt.Sprintf("%d instances", want), func() bool { return len(cl.InstanceIDs()) == want })
	return cl
}

// countRequest is the payload of the counting handler.
type countRequest struct {
	N       int    `json:"n"`
	DelayUS int    `json:"delay_us,omitempty"`
	FailAt  int    `json:"fail_at,omitempty"`  // return an error after this many items
	FailNow string `json:"fail_now,omitempty"` // fail before any item, with this error type
}

// counter streams the integers 0..n-1 as JSON numbers. On Stop it ends
// early and cleanly; it records what it saw in its fields.
type counter struct {
	mu       sync.Mutex
	sawStop  map[string]bool
	sawKill  map[string]bool
	finished map[string]int
	started  chan string
}

func newCounter() *counter {
	return &counter{sawStop: map[string]bool{}, sawKill: map[string]bool{}, finished: map[string]int{}, started: make(chan string, 1024)}
}

func (c *counter) Handle(rc *runtime.Context, payload []byte, emit func([]byte) error) error {
	var req countRequest
	if err := json.Unmarshal(payload, &req); err != nil {
		return runtime.NewError(runtime.TypeInvalidArgument, "bad request: %v", err)
	}
	if req.FailNow != "" {
		return runtime.NewError(runtime.ErrorType(req.FailNow), "refused")
	}
	select {
	case c.started <- rc.ID():
	default: // nobody is reading (benchmarks)
	}
	sent := 0
	defer func() {
		c.mu.Lock()
		c.finished[rc.ID()] = sent
		c.mu.Unlock()
	}()
	for i := range req.N {
		if req.FailAt > 0 && i == req.FailAt {
			return runtime.NewError(runtime.TypeEngineShutdown, "engine died at %d", i)
		}
		select {
		case <-rc.Done():
			c.mu.Lock()
			c.sawKill[rc.ID()] = true
			c.mu.Unlock()
			return context.Cause(rc)
		default:
		}
		if rc.IsStopped() {
			// A killed context is stopped too: a kill that lands after
			// the Done check above is a kill, not a stop.
			killed := rc.IsKilled()
			c.mu.Lock()
			if killed {
				c.sawKill[rc.ID()] = true
			} else {
				c.sawStop[rc.ID()] = true
			}
			c.mu.Unlock()
			if killed {
				return context.Cause(rc)
			}
			return nil
		}
		if err := emit(strconv.AppendInt(nil, int64(i), 10)); err != nil {
			// The kill may land while the item is being written: the
			// handler then learns of it from emit.
			c.mu.Lock()
			c.sawKill[rc.ID()] = rc.IsKilled()
			c.mu.Unlock()
			return err
		}
		sent++
		if req.DelayUS > 0 {
			time.Sleep(time.Duration(req.DelayUS) * time.Microsecond)
		}
	}
	return nil
}

// collect calls and returns the integers received.
func collect(rc *runtime.Context, cl *runtime.Client, id uint64, req countRequest, onItem func(int)) ([]int, error) {
	payload, _ := json.Marshal(req)
	var got []int
	err := cl.Call(rc, id, payload, func(item []byte) error {
		n, err := strconv.Atoi(string(item))
		if err != nil {
			return err
		}
		got = append(got, n)
		if onItem != nil {
			onItem(n)
		}
		return nil
	})
	return got, err
}

func checkSequence(t *testing.T, got []int, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("got %d items, want %d", len(got), n)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("item %d = %d: out of order or lost", i, v)
		}
	}
}

var errTest = errors.New("test")
