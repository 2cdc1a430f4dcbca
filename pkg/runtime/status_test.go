package runtime_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

func TestStatusServerHealthAndMetrics(t *testing.T) {
	c := newCluster(t, setup{runtime.DiscoveryMem, runtime.PlaneTCP})
	cfg := c.config()
	cfg.SystemPort = 0
	worker := startRuntime(t, cfg, c.mem)
	var addr string
	testenv.WaitFor(t, 5*time.Second, "the status server", func() bool { addr = worker.StatusAddr(); return addr != "" })
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/health"); code != http.StatusServiceUnavailable || !strings.Contains(body, `"notready"`) {
		t.Fatalf("/health before serving = %d %s, want 503 notready", code, body)
	}
	serve(t, worker, newCounter())
	caller := c.start(t)
	cl := client(t, caller, 1)
	if _, err := collect(runtime.NewContext(t.Context(), ""), cl, worker.InstanceID(), countRequest{N: 3}, nil); err != nil {
		t.Fatal(err)
	}
	code, body := get("/live")
	var rep runtime.HealthReport
	if err := json.Unmarshal([]byte(body), &rep); err != nil || code != http.StatusOK || rep.Status != "ready" || rep.Endpoints["generate"] != "ready" {
		t.Fatalf("/live while serving = %d %s", code, body)
	}
	// The worker books a request's end just after the caller has seen it.
	expectMetrics(t, get,
		`dynamo_component_requests_total{dynamo_component="worker",dynamo_endpoint="generate",dynamo_namespace="test"} 1`,
		`dynamo_component_inflight_requests{dynamo_component="worker",dynamo_endpoint="generate",dynamo_namespace="test"} 0`,
		`dynamo_component_request_duration_seconds_count{dynamo_component="worker",dynamo_endpoint="generate",dynamo_namespace="test"} 1`,
		`dynamo_component_uptime_seconds`,
	)
	// A failed start is counted as a generate error.
	_, _ = collect(runtime.NewContext(t.Context(), ""), cl, worker.InstanceID(), countRequest{FailNow: "InvalidArgument"}, nil)
	expectMetrics(t, get,
		`dynamo_component_errors_total{dynamo_component="worker",dynamo_endpoint="generate",dynamo_namespace="test",error_type="generate"} 1`)
}

// TestStatusServerReportsItsAddress checks what a process started with
// DYN_SYSTEM_PORT=0 relies on: the status server binds a port the kernel
// picks, on the host asked for, and logs the address it got.
func TestStatusServerReportsItsAddress(t *testing.T) {
	var log testenv.Buffer
	cfg := runtime.Config{Discovery: runtime.DiscoveryMem, TCPHost: "127.0.0.1", SystemHost: "127.0.0.1", SystemPort: 0, GracePeriod: -1}
	rt, err := runtime.New(t.Context(), cfg, runtime.Deps{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	line := regexp.MustCompile(`msg="runtime: status server listening" addr=(\S+)`)
	var m []string
	testenv.WaitFor(t, 5*time.Second, "the status server's log line", func() bool { m = line.FindStringSubmatch(log.String()); return m != nil })
	if addr := rt.StatusAddr(); m[1] != addr || !strings.HasPrefix(addr, "127.0.0.1:") || strings.HasSuffix(addr, ":0") {
		t.Fatalf("logged addr=%s, StatusAddr() %q: want the same 127.0.0.1 address with the port bound", m[1], addr)
	}
	resp, err := http.Get("http://" + m[1] + "/live")
	if err != nil {
		t.Fatalf("GET /live at the logged address: %v", err)
	}
	resp.Body.Close()
}

// expectMetrics waits up to 5 s for /metrics to show every line of want.
func expectMetrics(t *testing.T, get func(string) (int, string), want ...string) {
	t.Helper()
	var missing []string
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, metrics := get("/metrics")
		missing = missing[:0]
		for _, w := range want {
			if !strings.Contains(metrics, w) {
				missing = append(missing, w)
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics lacks:\n%s", strings.Join(missing, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
