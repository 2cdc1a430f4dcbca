package worker_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
)

// prober is a working engine whose backend.HealthProber verdict the test
// switches.
type prober struct {
	faulty
	sick   atomic.Bool
	probes atomic.Int64
}

var _ backend.HealthProber = (*prober)(nil)

func (p *prober) Healthy(context.Context) error {
	p.probes.Add(1)
	if p.sick.Load() {
		return errors.New("GET /health: 503 engine dead")
	}
	return nil
}

// An engine whose prober fails is taken out of routing and reported
// notready, even while its canaries would pass, and comes back once the
// prober passes again; the outage is logged once.
func TestHealthProberTakesTheEndpointOutOfRoutingUntilItRecovers(t *testing.T) {
	eng := &prober{}
	r := newCanaryRig(t, eng, worker.CanaryConfig{Enabled: true, WaitTime: 200 * time.Millisecond,
		RequestTimeout: 300 * time.Millisecond, ProbeInterval: 50 * time.Millisecond}, false)
	testenv.WaitFor(t, 10*time.Second, "/health to report the endpoint ready", func() bool {
		code, state := r.health(t)
		return code == http.StatusOK && state == "ready"
	})
	testenv.WaitFor(t, 10*time.Second, "probes", func() bool { return eng.probes.Load() >= 2 })

	eng.sick.Store(true)
	testenv.WaitFor(t, 10*time.Second, "/health to report the endpoint notready", func() bool {
		code, state := r.health(t)
		return code == http.StatusServiceUnavailable && state == "notready"
	})
	testenv.WaitFor(t, 10*time.Second, "the caller to drop the instance", func() bool { return len(r.client.InstanceIDs()) == 0 })
	// Still out while the prober fails, and no canary is sent meanwhile.
	canaries, probes := eng.canaryCount(), eng.probes.Load()
	testenv.WaitFor(t, 10*time.Second, "more probes", func() bool { return eng.probes.Load() >= probes+8 })
	if code, _ := r.health(t); code != http.StatusServiceUnavailable || len(r.client.InstanceIDs()) != 0 {
		t.Fatalf("while the prober fails: /health %d, %d instances; want 503 and none", code, len(r.client.InstanceIDs()))
	}
	if n := eng.canaryCount(); n != canaries {
		t.Errorf("%d canaries sent while the prober failed, want none", n-canaries)
	}

	eng.sick.Store(false)
	testenv.WaitFor(t, 10*time.Second, "the caller to list the instance again", func() bool { return len(r.client.InstanceIDs()) == 1 })
	testenv.WaitFor(t, 5*time.Second, "/health to report ready after recovery", func() bool {
		code, state := r.health(t)
		return code == http.StatusOK && state == "ready"
	})
	if err := r.call(t, 3); err != nil {
		t.Fatalf("a request after recovery: %v", err)
	}
	logs := r.log.String()
	if n := strings.Count(logs, "endpoint unhealthy"); n != 1 {
		t.Errorf("%d 'endpoint unhealthy' lines, want 1:\n%s", n, logs)
	}
	if n := strings.Count(logs, "endpoint healthy again"); n != 1 {
		t.Errorf("%d 'endpoint healthy again' lines, want 1:\n%s", n, logs)
	}
	if !strings.Contains(logs, "503 engine dead") {
		t.Errorf("the unhealthy line does not carry the prober's error:\n%s", logs)
	}
	if _, metrics := r.get(t, "/metrics"); !strings.Contains(metrics,
		`dynamo_component_endpoint_healthy{dynamo_component="backend",dynamo_endpoint="generate",dynamo_namespace="test"} 1`) {
		t.Errorf("/metrics does not report the endpoint healthy again:\n%s", metrics)
	}
}

// A prober failing while the engine is busy with real traffic takes the
// endpoint out too: probes do not wait for idleness as canaries do.
func TestHealthProberIsAskedWhileBusy(t *testing.T) {
	eng := &prober{}
	r := newCanaryRig(t, eng, worker.CanaryConfig{Enabled: true, WaitTime: 10 * time.Second,
		RequestTimeout: time.Second, ProbeInterval: 50 * time.Millisecond}, false)
	eng.sick.Store(true)
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, _ := r.health(t)
		if code == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a busy endpoint whose prober fails is still ready")
		}
		_ = r.call(t, 5) // fails once the instance has left
	}
	if n := eng.canaryCount(); n != 0 {
		t.Errorf("%d canaries for a busy endpoint, want none", n)
	}
}

// With the canaries off the engine's prober is still asked: a failing
// engine leaves routing and /health says notready, it comes back when the
// prober passes, and no canary is ever sent.
func TestHealthProberRunsWithTheCanariesOff(t *testing.T) {
	eng := &prober{}
	r := newCanaryRig(t, eng, worker.CanaryConfig{WaitTime: 50 * time.Millisecond,
		RequestTimeout: 300 * time.Millisecond, ProbeInterval: 50 * time.Millisecond}, false)
	testenv.WaitFor(t, 10*time.Second, "probes", func() bool { return eng.probes.Load() >= 2 })
	eng.sick.Store(true)
	testenv.WaitFor(t, 10*time.Second, "/health to report the endpoint notready", func() bool {
		code, state := r.health(t)
		return code == http.StatusServiceUnavailable && state == "notready"
	})
	testenv.WaitFor(t, 10*time.Second, "the caller to drop the instance", func() bool { return len(r.client.InstanceIDs()) == 0 })
	eng.sick.Store(false)
	testenv.WaitFor(t, 10*time.Second, "/health to report ready after recovery", func() bool {
		code, state := r.health(t)
		return code == http.StatusOK && state == "ready"
	})
	testenv.WaitFor(t, 10*time.Second, "the caller to list the instance again", func() bool { return len(r.client.InstanceIDs()) == 1 })
	if n := eng.canaryCount(); n != 0 {
		t.Errorf("%d canaries sent with the canaries off, want none", n)
	}
}
