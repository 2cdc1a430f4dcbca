package backendtest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// The inputs of the reference kit.
const (
	smokeMaxTokens  = 8     // the Generate and ConcurrentGenerate checks
	cancelMaxTokens = 10000 // the Cancellation check
	concurrency     = 8     // streams of the ConcurrentGenerate check
)

// kit is the state shared by the checks of one Run.
type kit struct {
	opts   options
	engine backend.Engine
	cfg    backend.Config // from Start
	pub    *publisher
}

// fail reports failure f of check, with an explanation.
func fail(l logger, check string, f Failure, format string, args ...any) {
	l.Helper()
	l.Errorf("%s: %s: %s", check, f, fmt.Sprintf(format, args...))
}

// request returns a fresh test request with the given max_tokens.
func (k *kit) request(maxTokens uint32) *backend.Request {
	req := &backend.Request{Model: k.cfg.Model, TokenIDs: []uint32{1, 2, 3}}
	for _, f := range k.opts.adapt {
		f(req)
	}
	req.StopConditions.MaxTokens = backend.Ptr(maxTokens)
	return req
}

// start is check 1: Start(ctx, 0) succeeds with a non-empty Config.Model.
// A KVEventSource gets its EventPublisher first, as from the Worker.
func (k *kit) start(l logger) bool {
	if ks, ok := k.engine.(backend.KVEventSource); ok {
		if err := protect(func() error { ks.SetEventPublisher(k.pub); return nil }); err != nil {
			fail(l, "Start", StartFailed, "SetEventPublisher: %v", err)
			return false
		}
	}
	var cfg backend.Config
	err := call(k.opts.timeout, func(ctx context.Context) error {
		var err error
		cfg, err = k.engine.Start(ctx, 0)
		return err
	})
	if err != nil {
		fail(l, "Start", StartFailed, "Start(ctx, 0): %v", err)
		return false
	}
	k.cfg = cfg
	if cfg.Model == "" {
		fail(l, "Start", EmptyModelInConfig, "Start returned a Config without Model: %+v", cfg)
		return false
	}
	return true
}

// kvEventSources is check 2: KVEventSources twice gives the same list.
func (k *kit) kvEventSources(l logger) {
	ks := k.engine.(backend.KVEventSource)
	var a, b []int
	if err := protect(func() error { a = ks.KVEventSources(); b = ks.KVEventSources(); return nil }); err != nil {
		fail(l, "KVEventSources", KvEventSourcesFailed, "%v", err)
		return
	}
	if !slices.Equal(a, b) {
		fail(l, "KVEventSources", KvEventSourcesNotIdempotent, "first call returned %v, second %v", a, b)
	}
}

// setupMetrics is check 3: SetupMetrics twice, each against a fresh
// registry, succeeds and gives the same ranks.
func (k *kit) setupMetrics(l logger) {
	ms := k.engine.(backend.MetricsSource)
	var ranks [2][]int
	for i := range ranks {
		mc := backend.MetricsContext{
			Model: k.cfg.Name(), Namespace: "dynamo", Component: "backend", Endpoint: "generate",
			Registerer: prometheus.NewRegistry(),
		}
		err := protect(func() error {
			var err error
			ranks[i], err = ms.SetupMetrics(mc)
			return err
		})
		if err != nil {
			fail(l, "SetupMetrics", SetupMetricsFailed, "call %d (fresh registry): %v", i+1, err)
			return
		}
	}
	if !slices.Equal(ranks[0], ranks[1]) {
		fail(l, "SetupMetrics", ComponentMetricsNotIdempotent, "first call returned ranks %v, second %v", ranks[0], ranks[1])
	}
}

// generate is check 4: one stream of [1 2 3], max_tokens 8, keeps the
// contract.
func (k *kit) generate(l logger) {
	if f, why := generate(k.engine, k.request(smokeMaxTokens), "backendtest-generate", k.opts.timeout); f != "" {
		fail(l, "Generate", f, "%s", why)
	}
}

// concurrentGenerate is check 5: 8 streams at once each succeed and keep
// the contract.
func (k *kit) concurrentGenerate(l logger) {
	type result struct {
		f   Failure
		why string
	}
	var results [concurrency]result
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			id := fmt.Sprintf("backendtest-concurrent-%d", i)
			f, why := generate(k.engine, k.request(smokeMaxTokens), id, k.opts.timeout)
			results[i] = result{f, why}
		})
	}
	wg.Wait()
	// One failure per distinct problem, naming the streams that had it.
	var order []result
	streams := map[result][]int{}
	for i, r := range results {
		if r.f == "" {
			continue
		}
		if streams[r] == nil {
			order = append(order, r)
		}
		streams[r] = append(streams[r], i+1)
	}
	for _, r := range order {
		fail(l, "ConcurrentGenerate", ConcurrentGenerateFailed, "streams %v of %d: %s: %s", streams[r], concurrency, r.f, r.why)
	}
}

// cancellation is check 6: a request stopped before Generate is called
// ends within 2 s with a FinishCancelled terminal. An Aborter is told, as
// the Worker would.
func (k *kit) cancellation(l logger) {
	ctx, cancel := context.WithTimeout(context.Background(), k.opts.timeout)
	defer cancel()
	rc := runtime.NewContext(ctx, "backendtest-cancel")
	defer rc.Release()
	rc.Stop()
	s := startGenerate(k.engine, rc, k.request(cancelMaxTokens))
	if ab, ok := k.engine.(backend.Aborter); ok {
		if err := protect(func() error { ab.Abort(rc, rc.ID()); return nil }); err != nil {
			fail(l, "Cancellation", ContractViolation, "Abort: %v", err)
		}
	}
	if !s.wait(k.opts.cancelDeadline) {
		outs, _, _ := s.result()
		fail(l, "Cancellation", CancellationNotObserved, "Generate of a stopped request still ran after %v (%d outputs so far)", k.opts.cancelDeadline, len(outs))
		rc.Kill()
		if !s.wait(k.opts.timeout) {
			l.Logf("Cancellation: Generate did not return within %v of a kill either", k.opts.timeout)
		}
		return
	}
	outs, err, violation := s.result()
	f, why := analyse(outs, err, violation)
	switch f {
	case GenerateFailed, StreamYieldedError, NoChunksYielded:
		fail(l, "Cancellation", f, "%s", why)
		return
	}
	// The terminal (a stream without one fails with NoTerminalChunk below).
	for i, o := range outs {
		if o != nil && o.IsTerminal() {
			if o.FinishReason.Kind != backend.FinishCancelled {
				fail(l, "Cancellation", CancellationIgnored, "the terminal (output #%d of %d) of a stopped request has finish reason %q, want %q", i+1, len(outs), o.FinishReason, backend.FinishCancelled)
			}
			break
		}
	}
	if f != "" {
		fail(l, "Cancellation", f, "%s", why)
	}
}

// healthCheck (this kit's own): the canary request of a HealthChecker
// gives a stream that keeps the contract.
func (k *kit) healthCheck(l logger) {
	var req *backend.Request
	if err := protect(func() error { req = k.engine.(backend.HealthChecker).HealthCheckRequest(); return nil }); err != nil || req == nil {
		fail(l, "HealthCheck", HealthCheckFailed, "HealthCheckRequest returned %v, %v", req, err)
		return
	}
	if f, why := generate(k.engine, req, "backendtest-health", k.opts.timeout); f != "" {
		fail(l, "HealthCheck", HealthCheckFailed, "%s: %s", f, why)
	}
}

// cleanup is check 7: Cleanup twice; both succeed.
func (k *kit) cleanup(l logger) {
	if err := call(k.opts.timeout, k.engine.Cleanup); err != nil {
		fail(l, "Cleanup", CleanupFailed, "%v", err)
	}
	if err := call(k.opts.timeout, k.engine.Cleanup); err != nil {
		fail(l, "Cleanup", SecondCleanupFailed, "%v", err)
	}
}

// events (this kit's own): everything published to the EventPublisher
// encoded to JSON.
func (k *kit) events(l logger) {
	if n, err := k.pub.result(); err != nil {
		fail(l, "Events", EventsNotJSON, "%v (of %d published)", err, n)
	}
}

// cleanupWithoutStart is check 8: Cleanup of a fresh engine succeeds.
func (k *kit) cleanupWithoutStart(l logger, newEngine func() backend.Engine) {
	var e backend.Engine
	if err := protect(func() error { e = newEngine(); return nil }); err != nil || e == nil {
		fail(l, "CleanupWithoutStart", CleanupWithoutStartFailed, "the engine factory returned %v, %v", e, err)
		return
	}
	if err := call(k.opts.timeout, e.Cleanup); err != nil {
		fail(l, "CleanupWithoutStart", CleanupWithoutStartFailed, "%v", err)
	}
}

// goroutineLeak (this kit's own): no goroutine started since Run began
// outlives the Cleanups.
func (k *kit) goroutineLeak(l logger, opts []goleak.Option) {
	if err := goleak.Find(opts...); err != nil {
		fail(l, "GoroutineLeak", GoroutineLeak, "%v", err)
	}
}
