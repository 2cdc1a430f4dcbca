package backendtest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// recorder is a reporter that records failures instead of failing, so the
// kit's own tests can assert which checks fail.
type recorder struct {
	path string
	log  *recording
}

// recording is shared by a recorder and its subtests.
type recording struct {
	mu       sync.Mutex
	errors   []string // "/Check: message"
	subtests []string
}

func newRecorder() *recorder { return &recorder{log: &recording{}} }

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	r.log.errors = append(r.log.errors, r.path+": "+fmt.Sprintf(format, args...))
}

func (r *recorder) Logf(string, ...any) {}

func (r *recorder) Run(name string, f func(*recorder)) bool {
	sub := &recorder{path: r.path + "/" + name, log: r.log}
	r.log.mu.Lock()
	r.log.subtests = append(r.log.subtests, sub.path)
	r.log.mu.Unlock()
	f(sub)
	return true
}

var _ reporter[*recorder] = (*recorder)(nil)

// withCancelDeadline shortens the Cancellation limit, for quick tests.
func withCancelDeadline(d time.Duration) Option {
	return func(o *options) error { o.cancelDeadline = d; return nil }
}

// TestEchoConforms runs the kit the way an engine author does.
func TestEchoConforms(t *testing.T) {
	Run(t, func(*testing.T) backend.Engine { return &echo{} })
}

// TestEchoWithEveryCapabilityConforms runs every optional check on engines
// that implement them correctly, through a recorder, and wants no failure.
func TestEchoWithEveryCapabilityConforms(t *testing.T) {
	engines := map[string]func() backend.Engine{
		"echo": func() backend.Engine { return &echo{} },
		"kv": func() backend.Engine {
			return &kvFake{sources: func() []int { return []int{0, 1} }, event: map[string]int{"stored": 1}}
		},
		"metrics": func() backend.Engine { return &metricsFake{setup: registerGauge} },
		"health": func() backend.Engine {
			return &healthFake{canary: &backend.Request{TokenIDs: []uint32{9}, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr[uint32](1)}}}
		},
	}
	for name, newEngine := range engines {
		t.Run(name, func(t *testing.T) {
			rec := newRecorder()
			run(rec, newEngine, WithRequest(func(r *backend.Request) { r.Model = "m" }))
			if len(rec.log.errors) != 0 {
				t.Errorf("failures of a conforming engine:\n%s", strings.Join(rec.log.errors, "\n"))
			}
			t.Logf("checks: %v", rec.log.subtests)
		})
	}
}

// registerGauge is a correct SetupMetrics: one gauge on the registry given.
func registerGauge(mc backend.MetricsContext) ([]int, error) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "engine_up", ConstLabels: prometheus.Labels{"model": mc.Model}})
	return []int{0}, mc.Registerer.Register(g)
}

// TestBrokenEnginesFail checks that each broken engine makes its check
// fail with the reference system's failure name.
func TestBrokenEnginesFail(t *testing.T) {
	tests := []struct {
		name    string
		engine  func(t *testing.T) backend.Engine
		check   string // subtest that must fail
		failure Failure
	}{
		{"start fails", func(*testing.T) backend.Engine {
			return &fake{start: func(context.Context) (backend.Config, error) { return backend.Config{}, errBroken }}
		}, "Start", StartFailed},
		{"start panics", func(*testing.T) backend.Engine {
			return &fake{start: func(context.Context) (backend.Config, error) { panic("no GPU") }}
		}, "Start", StartFailed},
		{"empty model", func(*testing.T) backend.Engine {
			return &fake{start: func(context.Context) (backend.Config, error) { return backend.Config{ContextLength: 8}, nil }}
		}, "Start", EmptyModelInConfig},
		{"generate fails", func(*testing.T) backend.Engine {
			return &fake{generate: func(context.Context, *backend.Request, func(*backend.Output) error) error { return errBroken }}
		}, "Generate", GenerateFailed},
		{"emits nothing", func(*testing.T) backend.Engine {
			return &fake{generate: func(context.Context, *backend.Request, func(*backend.Output) error) error { return nil }}
		}, "Generate", NoChunksYielded},
		{"error mid-stream", func(*testing.T) backend.Engine {
			return &fake{generate: func(_ context.Context, _ *backend.Request, emit func(*backend.Output) error) error {
				_ = emit(backend.Tokens(1))
				return errBroken
			}}
		}, "Generate", StreamYieldedError},
		{"chunk after terminal", func(*testing.T) backend.Engine {
			return &fake{generate: func(_ context.Context, _ *backend.Request, emit func(*backend.Output) error) error {
				_ = emit(backend.EOS(1))
				_ = emit(backend.Tokens(2)) // ignores the validator's error
				return nil
			}}
		}, "Generate", ChunkAfterTerminal},
		{"no terminal", func(*testing.T) backend.Engine {
			return &fake{generate: func(_ context.Context, req *backend.Request, emit func(*backend.Output) error) error {
				return emit(backend.Tokens(req.TokenIDs...))
			}}
		}, "Generate", NoTerminalChunk},
		{"usage mismatch", func(*testing.T) backend.Engine {
			return &fake{generate: func(_ context.Context, req *backend.Request, emit func(*backend.Output) error) error {
				return emit(backend.EOS(req.TokenIDs...).WithUsage(3, 99))
			}}
		}, "Generate", CompletionTokensMismatch},
		{"nil output", func(*testing.T) backend.Engine {
			return &fake{generate: func(_ context.Context, _ *backend.Request, emit func(*backend.Output) error) error {
				_ = emit(nil)
				return emit(backend.EOS())
			}}
		}, "Generate", ContractViolation},
		{"not safe for concurrent streams", func(*testing.T) backend.Engine {
			var busy sync.Mutex
			return &fake{generate: func(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
				if !busy.TryLock() {
					return fmt.Errorf("%w: busy", backend.ErrEngineShutdown)
				}
				defer busy.Unlock()
				time.Sleep(20 * time.Millisecond)
				return (&echo{}).Generate(ctx, req, emit)
			}}
		}, "ConcurrentGenerate", ConcurrentGenerateFailed},
		{"ignores stop", func(*testing.T) backend.Engine {
			return &fake{generate: func(_ context.Context, req *backend.Request, emit func(*backend.Output) error) error {
				return emit(backend.Length(1).WithUsage(3, 1))
			}}
		}, "Cancellation", CancellationIgnored},
		{"observes only kill", func(*testing.T) backend.Engine {
			return &fake{generate: func(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
				if req.MaxTokens(0) < 100 {
					return emit(backend.EOS())
				}
				<-ctx.Done()
				return ctx.Err()
			}}
		}, "Cancellation", CancellationNotObserved},
		{"cleanup fails", func(*testing.T) backend.Engine {
			return &fake{cleanup: func(*fake) error { return errBroken }}
		}, "Cleanup", CleanupFailed},
		{"second cleanup fails", func(*testing.T) backend.Engine {
			var n int
			return &fake{cleanup: func(*fake) error {
				if n++; n > 1 {
					return errBroken
				}
				return nil
			}}
		}, "Cleanup", SecondCleanupFailed},
		{"cleanup without start panics", func(*testing.T) backend.Engine {
			return &fake{cleanup: func(f *fake) error {
				if !f.started.Load() {
					panic("nil model")
				}
				return nil
			}}
		}, "CleanupWithoutStart", CleanupWithoutStartFailed},
		{"unstable kv sources", func(*testing.T) backend.Engine {
			var n int
			return &kvFake{sources: func() []int { n++; return make([]int, n) }}
		}, "KVEventSources", KvEventSourcesNotIdempotent},
		{"kv sources panic", func(*testing.T) backend.Engine {
			return &kvFake{sources: func() []int { panic("no ranks") }}
		}, "KVEventSources", KvEventSourcesFailed},
		{"kv events not json", func(*testing.T) backend.Engine {
			return &kvFake{sources: func() []int { return []int{0} }, event: make(chan int)}
		}, "Events", EventsNotJSON},
		{"setup metrics fails", func(*testing.T) backend.Engine {
			return &metricsFake{setup: func(backend.MetricsContext) ([]int, error) { return nil, errBroken }}
		}, "SetupMetrics", SetupMetricsFailed},
		{"unstable metrics ranks", func(*testing.T) backend.Engine {
			var n int
			return &metricsFake{setup: func(backend.MetricsContext) ([]int, error) { n++; return []int{n}, nil }}
		}, "SetupMetrics", ComponentMetricsNotIdempotent},
		{"bad canary", func(*testing.T) backend.Engine {
			return &healthFake{}
		}, "HealthCheck", HealthCheckFailed},
		{"leaks a goroutine", func(t *testing.T) backend.Engine {
			stop := make(chan struct{})
			t.Cleanup(func() { close(stop) })
			return &fake{start: func(context.Context) (backend.Config, error) {
				go func() { <-stop }()
				return backend.Config{Model: "leaky"}, nil
			}}
		}, "GoroutineLeak", GoroutineLeak},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder()
			run(rec, func() backend.Engine { return tc.engine(t) }, withCancelDeadline(300*time.Millisecond), WithTimeout(5*time.Second))
			prefix := fmt.Sprintf("/%s: %s: %s: ", tc.check, tc.check, tc.failure)
			found := false
			for _, e := range rec.log.errors {
				found = found || strings.HasPrefix(e, prefix)
			}
			if !found {
				t.Errorf("no failure %q; got:\n%s", prefix, strings.Join(rec.log.errors, "\n"))
			}
			if testing.Verbose() {
				t.Logf("failures:\n%s", strings.Join(rec.log.errors, "\n"))
			}
		})
	}
}

// TestBadOption checks that an invalid option fails Run before it starts
// anything.
func TestBadOption(t *testing.T) {
	rec := newRecorder()
	made := false
	run(rec, func() backend.Engine { made = true; return &echo{} }, WithTimeout(0))
	if made || len(rec.log.errors) != 1 || !strings.Contains(rec.log.errors[0], ErrInvalidOption.Error()) {
		t.Fatalf("engine made %v, failures %q", made, rec.log.errors)
	}
}

// TestWithRequest checks that the request adapter runs and that the kit
// still sets max_tokens.
func TestWithRequest(t *testing.T) {
	var mu sync.Mutex
	seen := map[uint32]bool{}
	eng := &fake{generate: func(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
		if req.Model != "named" || req.TokenIDs[0] != 7 {
			return fmt.Errorf("%w: request %+v", backend.ErrInvalidArgument, req)
		}
		mu.Lock()
		seen[uint32(req.MaxTokens(0))] = true
		mu.Unlock()
		return (&echo{}).Generate(ctx, req, emit)
	}}
	rec := newRecorder()
	run(rec, func() backend.Engine { return eng }, WithRequest(func(r *backend.Request) {
		r.Model = "named"
		r.TokenIDs = []uint32{7, 8}
		r.StopConditions.MaxTokens = backend.Ptr[uint32](1)
	}), WithoutLeakCheck())
	if len(rec.log.errors) != 0 {
		t.Fatalf("failures:\n%s", strings.Join(rec.log.errors, "\n"))
	}
	if !seen[smokeMaxTokens] || !seen[cancelMaxTokens] || len(seen) != 2 {
		t.Errorf("max_tokens seen %v, want %d and %d", seen, smokeMaxTokens, cancelMaxTokens)
	}
	for _, s := range rec.log.subtests {
		if s == "/GoroutineLeak" {
			t.Error("WithoutLeakCheck still ran the leak check")
		}
	}
}
