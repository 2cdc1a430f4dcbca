package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// Results of a canary, the values of the result label.
const (
	resultPass    = "pass"    // a first output that is not an error
	resultError   = "error"   // an error, or an error terminal, first
	resultEmpty   = "empty"   // the stream ended without output
	resultTimeout = "timeout" // no output within the request timeout
)

// setHealthyTimeout bounds a change of the endpoint's registration, so an
// unreachable discovery store does not hold up the next canary; and the
// wait, at shutdown, for a canary's stream that ignores its kill.
const setHealthyTimeout = 5 * time.Second

// canary checks the engine of an idle endpoint with a request of its own
// and takes the endpoint out of routing while the engine fails (spec
// runtime.md §5.3). Real traffic keeps it quiet: every output the
// endpoint sends resets its idle timer (busy), so a busy endpoint is never
// probed. While the endpoint is unhealthy a canary goes every wait time,
// whatever the traffic, so that recovery is noticed. An engine that is a
// backend.HealthProber is also asked every ProbeInterval, busy or idle
// (probe.go), even with the canaries off (CanaryConfig.Enabled false: a
// probe costs the engine nothing like a canary request does); the
// endpoint is healthy while both verdicts are.
type canary struct {
	w       *server
	ep      *runtime.Endpoint
	cfg     CanaryConfig
	payload []byte // the canary request, decoded afresh for every canary
	log     *slog.Logger
	metrics *canaryMetrics

	start time.Time
	last  atomic.Int64 // the endpoint's last output: time since start

	prober backend.HealthProber // nil unless the engine is one

	// Run's own state.
	healthy   bool          // the endpoint's verdict: canaryOK and no engineErr
	canaryOK  bool          // the verdict of the last canary
	engineErr string        // why the prober failed last; "" when it passed
	synced    bool          // the runtime has been told healthy
	running   chan struct{} // closed when the last canary's Generate returned
}

// newCanary builds the canary of w's endpoint and registers its metrics.
func (w *server) newCanary(ecfg backend.Config) (*canary, error) {
	req := w.cfg.Canary.Payload
	if req == nil {
		if hc, ok := w.engine.(backend.HealthChecker); ok {
			req = hc.HealthCheckRequest()
		}
	}
	if req == nil {
		req = &backend.Request{
			TokenIDs:        []uint32{1, 2, 3},
			StopConditions:  backend.StopConditions{MaxTokens: backend.Ptr(uint32(1))},
			SamplingOptions: backend.SamplingOptions{Temperature: backend.Ptr(0.0)},
		}
	}
	r := *req
	r.HealthCheck = true
	if r.Model == "" {
		r.Model = ecfg.Name()
	}
	payload, err := json.Marshal(&r)
	if err != nil {
		return nil, fmt.Errorf("worker: canary payload: %w", err)
	}
	m, err := newCanaryMetrics(w.rt.Registry(), w.cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	m.healthy.Set(1)
	prober, _ := w.engine.(backend.HealthProber)
	return &canary{
		prober:   prober,
		w:        w,
		ep:       w.rt.Endpoint(w.cfg.Endpoint),
		cfg:      w.cfg.Canary,
		payload:  payload,
		log:      w.log.With("endpoint", w.cfg.Endpoint.String()),
		metrics:  m,
		start:    time.Now(),
		healthy:  true,
		canaryOK: true,
		synced:   true,
	}, nil
}

// busy records an output of real traffic. It is called for every output
// the endpoint sends, so it mostly only reads.
func (c *canary) busy() {
	if c == nil {
		return
	}
	now := int64(time.Since(c.start))
	if now-c.last.Load() >= int64(time.Millisecond) {
		c.last.Store(now)
	}
}

func (c *canary) idle() time.Duration {
	return time.Since(c.start) - time.Duration(c.last.Load())
}

// Run checks the endpoint until ctx ends, and returns once the last
// canary's Generate has returned (killed with ctx), or after
// setHealthyTimeout if the engine ignores the kill: a stuck engine must
// not keep the worker from its Cleanup.
func (c *canary) Run(ctx context.Context) {
	defer func() {
		if c.running == nil {
			return
		}
		select {
		case <-c.running:
		case <-time.After(setHealthyTimeout):
			c.log.Warn("worker: the last health check still runs after its kill; not waiting for it")
		}
	}()
	t := time.NewTimer(c.cfg.WaitTime)
	defer t.Stop()
	canaries := t.C
	if !c.cfg.Enabled {
		t.Stop()
		canaries = nil // the engine's prober alone
	}
	var probes <-chan time.Time
	if c.prober != nil {
		tk := time.NewTicker(c.cfg.ProbeInterval)
		defer tk.Stop()
		probes = tk.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-probes:
			if c.probeEngine(ctx) && canaries != nil {
				t.Reset(0) // the engine is back: check it with a canary now
			}
			continue
		case <-canaries:
		}
		if idle := c.idle(); c.healthy && idle < c.cfg.WaitTime {
			t.Reset(c.cfg.WaitTime - idle)
			continue
		}
		c.check(ctx)
		t.Reset(c.cfg.WaitTime)
	}
}

// check sends one canary and applies its verdict. While the engine's
// prober fails, no canary is sent: the prober's verdict stands.
func (c *canary) check(ctx context.Context) {
	if c.engineErr != "" {
		return
	}
	result, reason := c.probe(ctx)
	if result == "" {
		return // shutting down
	}
	c.metrics.checks.WithLabelValues(result).Inc()
	c.canaryOK = result == resultPass
	c.apply(ctx, reason)
}

// apply sets the endpoint's verdict from the last canary and the last
// probe: a change is logged, and the runtime takes the endpoint out of
// discovery or puts it back. reason says why it is unhealthy.
func (c *canary) apply(ctx context.Context, reason string) {
	ok := c.canaryOK && c.engineErr == ""
	if ok != c.healthy {
		c.healthy, c.synced = ok, false
		if ok {
			c.metrics.healthy.Set(1)
			c.log.Info("worker: endpoint healthy again: a health check passed; back in routing")
		} else {
			c.metrics.healthy.Set(0)
			c.log.Warn("worker: endpoint unhealthy: out of routing until a health check passes", "reason", reason)
		}
	}
	if c.synced {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, setHealthyTimeout)
	defer cancel()
	if err := c.ep.SetHealthy(sctx, ok); err != nil {
		// Not served yet, or shutting down; or discovery is unreachable.
		// Try again after the next canary.
		if !errors.Is(err, runtime.ErrNotServing) && ctx.Err() == nil {
			c.log.Warn("worker: cannot change the endpoint's registration; trying again after the next health check", "healthy", ok, "err", err)
		}
		return
	}
	c.synced = true
}

// probe sends one canary to the engine and waits up to the request
// timeout for its first output. It returns the result and, for a failure,
// why; "" when ctx ended first. The canary's stream is killed once the
// verdict is in; the next probe fails at once while it has not ended.
func (c *canary) probe(ctx context.Context) (result, reason string) {
	if c.running != nil {
		select {
		case <-c.running:
			c.running = nil
		default:
			return resultTimeout, "the last health check still runs after being cancelled"
		}
	}
	var req backend.Request
	if err := json.Unmarshal(c.payload, &req); err != nil {
		return resultError, fmt.Sprintf("decode the canary payload: %v", err) // cannot happen: we encoded it
	}
	rc := runtime.NewContext(ctx, "health-check-"+uuid.NewString())
	first := make(chan *backend.Output, 1)
	ended := make(chan error, 1)
	running := make(chan struct{})
	c.running = running
	go func() {
		defer close(running)
		defer rc.Release()
		ended <- c.w.generate(rc, rc, &req, func(o *backend.Output) error {
			if o != nil {
				o = new(*o) // the engine may fill o again once emit returns
			}
			select {
			case first <- o:
			default:
			}
			return nil
		})
	}()
	defer rc.Kill() // the verdict is in; a stream still running is not wanted

	timer := time.NewTimer(c.cfg.RequestTimeout)
	defer timer.Stop()
	select {
	case o := <-first:
		return judge(o)
	case err := <-ended:
		select {
		case o := <-first:
			return judge(o)
		default:
		}
		if err != nil {
			return resultError, "the engine failed the health check: " + err.Error()
		}
		return resultEmpty, "the health check's stream ended without output"
	case <-timer.C:
		return resultTimeout, fmt.Sprintf("no output from the health check within %s", c.cfg.RequestTimeout)
	case <-ctx.Done():
		return "", ""
	}
}

// judge rates a canary's first output.
func judge(o *backend.Output) (result, reason string) {
	if o.FinishReason != nil && o.FinishReason.Kind == backend.FinishError {
		return resultError, "the health check's output is an error: " + o.FinishReason.Message
	}
	return resultPass, ""
}

// canaryMetrics are the canary's metrics for one endpoint.
type canaryMetrics struct {
	checks  *prometheus.CounterVec // by result
	healthy prometheus.Gauge
}

func newCanaryMetrics(reg prometheus.Registerer, ep runtime.EndpointID) (*canaryMetrics, error) {
	labels := []string{runtime.LabelNamespace, runtime.LabelComponent, runtime.LabelEndpoint}
	checks, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dynamo_component_health_checks_total",
		Help: "Canary health checks of the endpoint, by result: pass, error (an error or an error output first), empty (no output), timeout (no output in time).",
	}, append(labels[:3:3], "result")))
	if err != nil {
		return nil, err
	}
	healthy, err := register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dynamo_component_endpoint_healthy",
		Help: "1 while the endpoint passes its health checks, 0 while it is out of routing because it failed one.",
	}, labels))
	if err != nil {
		return nil, err
	}
	l := prometheus.Labels{runtime.LabelNamespace: ep.Namespace, runtime.LabelComponent: ep.Component, runtime.LabelEndpoint: ep.Name}
	m := &canaryMetrics{checks: checks.MustCurryWith(l), healthy: healthy.With(l)}
	for _, r := range []string{resultPass, resultError, resultEmpty, resultTimeout} {
		m.checks.WithLabelValues(r) // every result shows, from 0
	}
	return m, nil
}

// register registers c on reg, or returns the collector registered before
// (a second worker on the same runtime).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if prev, ok := are.ExistingCollector.(C); ok {
			return prev, nil
		}
	}
	if err != nil {
		return c, fmt.Errorf("worker: metrics: %w", err)
	}
	return c, nil
}
