package backendtest

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// Run puts engines made by newEngine through the conformance checks, each
// a subtest of t named after the check (see the package doc and
// docs/writing-an-engine.md for the table). newEngine is called twice, with
// t: the first engine goes through every check, the second is cleaned up
// without being started. Run does not call t.Parallel.
func Run(t *testing.T, newEngine func(t *testing.T) backend.Engine, opts ...Option) {
	t.Helper()
	run(t, func() backend.Engine { return newEngine(t) }, opts...)
}

// logger is the part of *testing.T a check reports through.
type logger interface {
	Helper()
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
}

// reporter is what run needs of a test: *testing.T is a reporter of
// itself, and the kit's own tests use a recorder to assert failures.
type reporter[R any] interface {
	logger
	Run(name string, f func(R)) bool
}

// run is Run for any reporter.
func run[R reporter[R]](r R, newEngine func() backend.Engine, opts ...Option) {
	r.Helper()
	o := defaults()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			r.Errorf("%v", err)
			return
		}
	}
	var leaks []goleak.Option
	if o.leakCheck {
		leaks = append(leaks, goleak.IgnoreCurrent())
	}
	k := &kit{opts: o, pub: &publisher{}}
	if err := protect(func() error { k.engine = newEngine(); return nil }); err != nil || k.engine == nil {
		r.Errorf("backendtest: the engine factory failed: engine %v, %v", k.engine, err)
		return
	}

	started := false
	r.Run("Start", func(r R) { started = k.start(r) })
	if started {
		if _, ok := k.engine.(backend.KVEventSource); ok {
			r.Run("KVEventSources", func(r R) { k.kvEventSources(r) })
		}
		if _, ok := k.engine.(backend.MetricsSource); ok {
			r.Run("SetupMetrics", func(r R) { k.setupMetrics(r) })
		}
		r.Run("Generate", func(r R) { k.generate(r) })
		r.Run("ConcurrentGenerate", func(r R) { k.concurrentGenerate(r) })
		r.Run("Cancellation", func(r R) { k.cancellation(r) })
		if _, ok := k.engine.(backend.HealthChecker); ok {
			r.Run("HealthCheck", func(r R) { k.healthCheck(r) })
		}
	} else {
		r.Logf("backendtest: Start failed; skipping the checks that need a started engine")
	}
	r.Run("Cleanup", func(r R) { k.cleanup(r) })
	if _, ok := k.engine.(backend.KVEventSource); ok {
		r.Run("Events", func(r R) { k.events(r) })
	}
	r.Run("CleanupWithoutStart", func(r R) { k.cleanupWithoutStart(r, newEngine) })
	if o.leakCheck {
		r.Run("GoroutineLeak", func(r R) { k.goroutineLeak(r, leaks) })
	}
}
