package grafana

import (
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/frontend"
	"github.com/dynamo-go/dynamo/pkg/kvevents"
	"github.com/dynamo-go/dynamo/pkg/mocker"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
	"github.com/dynamo-go/dynamo/pkg/runtime/runtimetest"
)

// demoModel is the repository's demo model, relative to this package.
const demoModel = "../../models/demo"

// metric is one metric a registry holds.
type metric struct {
	// labels are its variable label names, in registration order.
	labels []string
	// typ is "counter", "gauge", "histogram", "summary" or "untyped" as
	// /metrics says it, or "" when it has no series yet.
	typ string
}

// process is what one process registers: metric name -> metric.
type process map[string]metric

// stack is the registries of a frontend and of a mocker worker, built as
// the binaries build them, and the metrics a worker following an engine's
// ZeroMQ KV events adds to its registry (pkg/kvevents).
type stack struct {
	frontend, worker, kvevents process
}

// startStack runs, in the test process, a mocker worker with health checks
// on (as cmd/mocker's runWorker builds it, with a status server) and a
// frontend routing with --router-mode kv and session affinity on (as
// cmd/frontend's serve builds it: one registry with the Go and process
// collectors, the runtime's, the frontend's, the model registry's with
// migration, KV routing and sessions),
// both on in-process discovery; sends one streamed chat request through
// them; and reads what both registries describe and what both /metrics
// say. cmd/frontend and cmd/mocker are main packages, so their few lines
// of composition are repeated here; keep them in step.
func startStack(t *testing.T) *stack {
	t.Helper()
	mem := discovery.NewMemSpace()
	base := runtime.Config{Discovery: runtime.DiscoveryMem, TCPHost: "127.0.0.1", GracePeriod: -1, SystemPort: runtime.SystemPortDisabled}

	// The worker.
	wreg := prometheus.NewRegistry()
	wcfg := base
	wcfg.SystemHost, wcfg.SystemPort = "127.0.0.1", 0
	wrt := runtimetest.Start(t, wcfg, runtime.Deps{MemSpace: mem, Registry: wreg})
	mcfg := mocker.DefaultConfig()
	mcfg.Model, mcfg.SpeedupRatio = "demo", 100
	mcfg.OutputTokens = []uint32{39, 371, 78, 437, 299, 257, 70, 309} // ordinary tokens of the demo model
	eng, err := mocker.New(mcfg)
	if err != nil {
		t.Fatal(err)
	}
	run(t, "worker.Run", func(ctx context.Context) error {
		return worker.Run(ctx, wrt, eng, worker.Config{
			Endpoint:  runtime.EndpointID{Namespace: "dynamo", Component: "backend", Name: "generate"},
			ModelPath: demoModel, Canary: worker.CanaryConfig{Enabled: true},
		})
	})

	// The frontend.
	freg := prometheus.NewRegistry()
	freg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	frt := runtimetest.Start(t, base, runtime.Deps{MemSpace: mem, Registry: freg})
	met, err := frontend.NewMetrics(freg, frontend.MetricsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	models, err := pipeline.New(pipeline.Config{RouterMode: pipeline.RouterKV, SessionAffinityTTL: time.Minute}, pipeline.Deps{Runtime: frt, Registry: freg, Metrics: met})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := frontend.New(frontend.Config{ShutdownGrace: -1}, frontend.Deps{Models: frontend.ServeRegistry(models), Registry: freg, Metrics: met})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	run(t, "pipeline Run", models.Run)
	run(t, "frontend Run", func(ctx context.Context) error { return svc.Run(ctx, ln, "", "") })

	testenv.WaitFor(t, 20*time.Second, "the frontend to serve the demo model", func() bool {
		return strings.Contains(get(t, url+"/v1/models"), `"demo"`)
	})
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(
		`{"model":"demo","messages":[{"role":"user","content":"`+strings.Repeat("Hello there. ", 30)+`"}],"max_tokens":4,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "[DONE]") {
		t.Fatalf("chat: %d %s", resp.StatusCode, body)
	}

	var status string
	testenv.WaitFor(t, 5*time.Second, "the worker's status server", func() bool { status = wrt.StatusAddr(); return status != "" })
	kreg := prometheus.NewRegistry()
	if _, err := kvevents.NewMetrics(kreg); err != nil {
		t.Fatal(err)
	}
	return &stack{
		frontend: describe(t, freg, get(t, url+"/metrics")),
		worker:   describe(t, wreg, get(t, "http://"+status+"/metrics")),
		kvevents: describe(t, kreg, ""),
	}
}

// run runs f until the test ends, and reports its error.
func run(t *testing.T, name string, f func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s: %v", name, err)
		}
	})
}

// get returns the body of a GET of url.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// descRE reads a prometheus.Desc's String, which is the only way it tells
// its name and labels.
var descRE = regexp.MustCompile(`^Desc\{fqName: "([^"]+)", .*variableLabels: \{([^}]*)\}\}$`)

// typeRE reads the TYPE lines of the text exposition format.
var typeRE = regexp.MustCompile(`(?m)^# TYPE (\S+) (\S+)$`)

// describe lists every metric reg holds, with or without series (what
// Describe says), typed by the TYPE lines of its /metrics page.
func describe(t *testing.T, reg *prometheus.Registry, page string) process {
	t.Helper()
	ch := make(chan *prometheus.Desc)
	go func() { reg.Describe(ch); close(ch) }()
	p := process{}
	for d := range ch {
		m := descRE.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read %s", d)
		}
		var labels []string
		for l := range strings.SplitSeq(m[2], ",") {
			if l = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(l), "c("), ")"); l != "" {
				labels = append(labels, l)
			}
		}
		p[m[1]] = metric{labels: labels}
	}
	for _, m := range typeRE.FindAllStringSubmatch(page, -1) {
		x, ok := p[m[1]]
		if !ok {
			t.Errorf("/metrics has %s, which the registry does not describe", m[1])
			continue
		}
		x.typ = m[2]
		p[m[1]] = x
	}
	return p
}
