package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
	"github.com/dynamo-go/dynamo/pkg/runtime/runtimetest"
)

// The behaviours of the faulty engine.
const (
	engineOK   int32 = iota // one token per 10 ms up to max_tokens, then Length
	engineFail              // every request fails at once
	engineHang              // every request hangs until it is killed
)

// faulty is an engine whose health the test switches, and which records
// the canary requests it sees.
type faulty struct {
	mode atomic.Int32

	mu       sync.Mutex
	canaries []*backend.Request
	real     int
	killed   []time.Duration // how long each hung canary waited for its kill
}

func (e *faulty) Start(context.Context, uint64) (backend.Config, error) {
	return backend.Config{Model: "faulty-model", ContextLength: 4096}, nil
}

func (e *faulty) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	e.mu.Lock()
	if req.HealthCheck {
		e.canaries = append(e.canaries, req)
	} else {
		e.real++
	}
	e.mu.Unlock()
	switch e.mode.Load() {
	case engineFail:
		return fmt.Errorf("%w: the GPU fell off the bus", backend.ErrEngineShutdown)
	case engineHang:
		start := time.Now()
		<-ctx.Done()
		if req.HealthCheck {
			e.mu.Lock()
			e.killed = append(e.killed, time.Since(start))
			e.mu.Unlock()
		}
		return context.Cause(ctx)
	}
	n := req.MaxTokens(8)
	for i := range n - 1 {
		if err := emit(backend.Tokens(uint32(i))); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(10 * time.Millisecond):
		}
	}
	return emit(backend.Length(uint32(n-1)).WithUsage(len(req.TokenIDs), n))
}

func (e *faulty) Cleanup(context.Context) error { return nil }

func (e *faulty) canaryCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.canaries)
}

// canaryRig is a worker serving an engine with health checks, its status
// server, and a caller's client of the endpoint.
type canaryRig struct {
	worker, caller *runtime.DistributedRuntime
	client         *runtime.Client
	log            *testenv.Buffer
}

// newCanaryRig starts the rig on a real etcd (etcd true) or the mem
// discovery, with the TCP request plane.
func newCanaryRig(t *testing.T, eng backend.Engine, canary worker.CanaryConfig, etcd bool) *canaryRig {
	t.Helper()
	cfg := runtime.Config{TCPHost: "127.0.0.1", SystemPort: runtime.SystemPortDisabled, GracePeriod: 100 * time.Millisecond}
	var deps runtime.Deps
	if etcd {
		cfg.Discovery, cfg.EtcdEndpoints = runtime.DiscoveryEtcd, []string{testenv.StartEtcd(t).URL}
	} else {
		cfg.Discovery, deps.MemSpace = runtime.DiscoveryMem, discovery.NewMemSpace()
	}
	r := &canaryRig{log: &testenv.Buffer{}}
	wcfg := cfg
	wcfg.SystemHost, wcfg.SystemPort = "127.0.0.1", 0
	r.worker = runtimetest.Start(t, wcfg, deps)
	r.caller = runtimetest.Start(t, cfg, deps)

	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() {
		runErr <- worker.Run(ctx, r.worker, eng, worker.Config{
			Endpoint: testEP, ModelPath: demoModel, ValidateStreams: true, Canary: canary,
			Logger: slog.New(slog.NewTextHandler(r.log, nil)),
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-runErr; err != nil {
			t.Errorf("worker.Run: %v", err)
		}
	})

	wctx, wcancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer wcancel()
	cl, err := r.caller.Endpoint(testEP).Client(wctx)
	if err == nil {
		_, err = cl.WaitForInstances(wctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	r.client = cl
	return r
}

// get fetches a path of the worker's status server.
func (r *canaryRig) get(t *testing.T, path string) (int, string) {
	t.Helper()
	var addr string
	testenv.WaitFor(t, 5*time.Second, "the status server", func() bool { addr = r.worker.StatusAddr(); return addr != "" })
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// health reports /health's status code and the endpoint's state.
func (r *canaryRig) health(t *testing.T) (int, string) {
	t.Helper()
	code, body := r.get(t, "/health")
	var rep runtime.HealthReport
	if err := json.Unmarshal([]byte(body), &rep); err != nil {
		t.Fatalf("/health body %q: %v", body, err)
	}
	return code, rep.Endpoints[testEP.Name]
}

// call sends one request to the worker's instance.
func (r *canaryRig) call(t *testing.T, maxTokens uint32) error {
	t.Helper()
	req := request(maxTokens)
	req.Model = "faulty-model"
	payload, _ := json.Marshal(req)
	ids := r.client.InstanceIDs()
	if len(ids) == 0 {
		return fmt.Errorf("no instance listed")
	}
	rc := runtime.NewContext(t.Context(), "")
	defer rc.Release()
	return r.client.Call(rc, ids[0], payload, func([]byte) error { return nil })
}

// A failing engine is taken out of routing and reported notready within a
// wait time and a timeout, and comes back once a later canary passes.
func TestCanaryTakesAFailingEndpointOutOfRoutingUntilItRecovers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mode   int32
		result string
	}{
		{"error", engineFail, "error"},
		{"hang", engineHang, "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := &faulty{}
			r := newCanaryRig(t, eng, worker.CanaryConfig{Enabled: true, WaitTime: 200 * time.Millisecond, RequestTimeout: 300 * time.Millisecond}, true)
			testenv.WaitFor(t, 10*time.Second, "/health to report the working endpoint ready", func() bool {
				code, state := r.health(t)
				return code == http.StatusOK && state == "ready"
			})
			testenv.WaitFor(t, 10*time.Second, "a passing canary", func() bool { return eng.canaryCount() > 0 })
			if code, _ := r.health(t); code != http.StatusOK || len(r.client.InstanceIDs()) != 1 {
				t.Fatalf("after a passing canary: /health %d, %d instances listed; want 200 and 1", code, len(r.client.InstanceIDs()))
			}

			eng.mode.Store(tc.mode)
			testenv.WaitFor(t, 10*time.Second, "/health to report the endpoint notready", func() bool {
				code, state := r.health(t)
				return code == http.StatusServiceUnavailable && state == "notready"
			})
			testenv.WaitFor(t, 10*time.Second, "the caller to drop the instance", func() bool { return len(r.client.InstanceIDs()) == 0 })
			if kvs, err := r.caller.Store().List(t.Context(), runtime.EndpointPrefix(runtime.InstancesBucket, testEP)); err != nil || len(kvs) != 0 {
				t.Fatalf("generate instance keys of an unhealthy worker (its files endpoint stays): %d, %v; want none", len(kvs), err)
			}
			// Still unhealthy after more canaries, and still probed.
			seen := eng.canaryCount()
			testenv.WaitFor(t, 10*time.Second, "canaries while unhealthy", func() bool { return eng.canaryCount() >= seen+2 })
			if code, _ := r.health(t); code != http.StatusServiceUnavailable || len(r.client.InstanceIDs()) != 0 {
				t.Fatalf("while failing: /health %d, %d instances; want 503 and none", code, len(r.client.InstanceIDs()))
			}

			eng.mode.Store(engineOK)
			testenv.WaitFor(t, 10*time.Second, "the caller to list the instance again", func() bool { return len(r.client.InstanceIDs()) == 1 })
			// The key is written a moment before /health turns ready.
			testenv.WaitFor(t, 5*time.Second, "/health to report ready after recovery", func() bool {
				code, state := r.health(t)
				return code == http.StatusOK && state == "ready"
			})
			if err := r.call(t, 3); err != nil {
				t.Fatalf("a request after recovery: %v", err)
			}

			// One line when the endpoint went down, with the reason, one
			// when it came back; none for the canaries in between.
			logs := r.log.String()
			if n := strings.Count(logs, "endpoint unhealthy"); n != 1 {
				t.Errorf("%d 'endpoint unhealthy' lines, want 1:\n%s", n, logs)
			}
			if n := strings.Count(logs, "endpoint healthy again"); n != 1 {
				t.Errorf("%d 'endpoint healthy again' lines, want 1:\n%s", n, logs)
			}
			if want := map[string]string{"error": "GPU fell off the bus", "hang": "no output from the health check within 300ms"}[tc.name]; !strings.Contains(logs, want) {
				t.Errorf("the unhealthy line does not say why (%q):\n%s", want, logs)
			}
			_, metrics := r.get(t, "/metrics")
			for _, want := range []string{
				`dynamo_component_health_checks_total{dynamo_component="backend",dynamo_endpoint="generate",dynamo_namespace="test",result="` + tc.result + `"}`,
				`dynamo_component_health_checks_total{dynamo_component="backend",dynamo_endpoint="generate",dynamo_namespace="test",result="pass"}`,
				`dynamo_component_endpoint_healthy{dynamo_component="backend",dynamo_endpoint="generate",dynamo_namespace="test"} 1`,
			} {
				if !strings.Contains(metrics, want) {
					t.Errorf("/metrics lacks %s", want)
				}
			}
			if strings.Contains(metrics, `result="`+tc.result+`"} 0`) {
				t.Errorf("no %s canary counted:\n%s", tc.result, metrics)
			}
		})
	}
}

// A hung canary is cancelled when the request timeout expires: the
// engine sees its kill, no sooner than the timeout.
func TestHungCanaryIsKilledAfterTheRequestTimeout(t *testing.T) {
	eng := &faulty{}
	eng.mode.Store(engineHang)
	const timeout = 300 * time.Millisecond
	r := newCanaryRig(t, eng, worker.CanaryConfig{Enabled: true, WaitTime: 200 * time.Millisecond, RequestTimeout: timeout}, false)
	testenv.WaitFor(t, 10*time.Second, "two hung canaries to be killed", func() bool {
		eng.mu.Lock()
		defer eng.mu.Unlock()
		return len(eng.killed) >= 2
	})
	eng.mu.Lock()
	killed := slices.Clone(eng.killed)
	eng.mu.Unlock()
	for _, d := range killed {
		if d < timeout || d > 10*time.Second {
			t.Errorf("a hung canary was killed after %s, want the request timeout (%s)", d, timeout)
		}
	}
	if code, _ := r.health(t); code != http.StatusServiceUnavailable {
		t.Errorf("/health with a hung engine = %d, want 503", code)
	}
}

// Real traffic faster than the wait time keeps canaries away; once it
// stops, the idle endpoint is probed.
func TestBusyEndpointIsNotProbed(t *testing.T) {
	eng := &faulty{}
	r := newCanaryRig(t, eng, worker.CanaryConfig{Enabled: true, WaitTime: time.Second, RequestTimeout: time.Second}, false)
	// Outputs every 10 ms for three wait times.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if err := r.call(t, 20); err != nil {
			t.Fatal(err)
		}
	}
	if n := eng.canaryCount(); n != 0 {
		t.Fatalf("a busy endpoint got %d canaries, want none", n)
	}
	testenv.WaitFor(t, 10*time.Second, "a canary once the traffic stopped", func() bool { return eng.canaryCount() > 0 })
}

// Without Canary.Enabled no canary reaches the engine, however short the
// wait time, and no canary metrics are registered.
func TestCanaryIsOffByDefault(t *testing.T) {
	eng := &faulty{}
	r := newCanaryRig(t, eng, worker.CanaryConfig{WaitTime: 10 * time.Millisecond, RequestTimeout: 10 * time.Millisecond}, false)
	time.Sleep(500 * time.Millisecond)
	if n := eng.canaryCount(); n != 0 {
		t.Fatalf("%d canaries with health checks off, want none", n)
	}
	if _, metrics := r.get(t, "/metrics"); strings.Contains(metrics, "health_checks") {
		t.Fatal("canary metrics registered with health checks off")
	}
}

// checker is a faulty engine that supplies its own canary request.
type checker struct{ faulty }

func (*checker) HealthCheckRequest() *backend.Request {
	return &backend.Request{TokenIDs: []uint32{42}, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr(uint32(1))}}
}

// The canary request is marked, carries the served model, and is the
// configured payload, else the engine's, else the default.
func TestCanaryPayload(t *testing.T) {
	override := &backend.Request{TokenIDs: []uint32{7, 8}, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr(uint32(2))}}
	for _, tc := range []struct {
		name    string
		eng     interface{ canaryCount() int }
		payload *backend.Request
		want    []uint32
	}{
		{"default", &faulty{}, nil, []uint32{1, 2, 3}},
		{"engine", &checker{}, nil, []uint32{42}},
		{"override", &checker{}, override, []uint32{7, 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newCanaryRig(t, tc.eng.(backend.Engine), worker.CanaryConfig{Enabled: true, WaitTime: 50 * time.Millisecond, Payload: tc.payload}, false)
			testenv.WaitFor(t, 10*time.Second, "a canary", func() bool { return tc.eng.canaryCount() > 0 })
			var f *faulty
			switch e := tc.eng.(type) {
			case *faulty:
				f = e
			case *checker:
				f = &e.faulty
			}
			f.mu.Lock()
			req := f.canaries[0]
			f.mu.Unlock()
			if !req.HealthCheck || req.Model != "faulty-model" || !slices.Equal(req.TokenIDs, tc.want) {
				t.Fatalf("canary request %+v, want marked, model faulty-model, token ids %v", req, tc.want)
			}
		})
	}
}

func TestCanaryConfigIsChecked(t *testing.T) {
	for _, c := range []worker.CanaryConfig{
		{WaitTime: -time.Second},
		{RequestTimeout: -time.Second},
		{ProbeInterval: -time.Second},
		{Payload: &backend.Request{}},
	} {
		if err := (worker.Config{Canary: c}).Validate(); err == nil {
			t.Errorf("Validate accepted %+v", c)
		}
	}
}
