package runtime_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime"
)

func TestStatusServerHealthAndMetrics(t *testing.T) {
	c := newCluster(t, setup{runtime.DiscoveryMem, runtime.PlaneTCP})
	cfg := c.config()
	cfg.SystemPort = 0
	worker := startRuntime(t, cfg, c.mem)
	var addr string
	waitFor(t, 5*time.Second, "the status server", func() bool { addr = worker.StatusAddr(); return addr != "" })
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
