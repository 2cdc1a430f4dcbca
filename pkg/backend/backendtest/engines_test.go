package backendtest

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// echo is the smallest conforming engine: it echoes its prompt ids back,
// one per output, up to max_tokens, and honours stop.
type echo struct{}

var _ backend.Engine = (*echo)(nil)

// Start reports the model "echo".
func (*echo) Start(context.Context, uint64) (backend.Config, error) {
	return backend.Config{Model: "echo"}, nil
}

// Generate echoes req.TokenIDs.
func (*echo) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	limit, prompt := req.MaxTokens(len(req.TokenIDs)), len(req.TokenIDs)
	for n, id := range req.TokenIDs {
		if backend.IsStopped(ctx) {
			return emit(backend.Cancelled().WithUsage(prompt, n))
		}
		if n == limit {
			return emit(backend.Length().WithUsage(prompt, n))
		}
		if err := emit(backend.Tokens(id)); err != nil {
			return err
		}
	}
	return emit(backend.EOS().WithUsage(prompt, prompt))
}

// Cleanup has nothing to release.
func (*echo) Cleanup(context.Context) error { return nil }

// fake is echo with any method replaced, to break one rule at a time.
type fake struct {
	echo
	started  atomic.Bool
	start    func(ctx context.Context) (backend.Config, error)
	generate func(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error
	cleanup  func(f *fake) error
}

func (f *fake) Start(ctx context.Context, id uint64) (backend.Config, error) {
	f.started.Store(true)
	if f.start != nil {
		return f.start(ctx)
	}
	return f.echo.Start(ctx, id)
}

func (f *fake) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	if f.generate != nil {
		return f.generate(ctx, req, emit)
	}
	return f.echo.Generate(ctx, req, emit)
}

func (f *fake) Cleanup(ctx context.Context) error {
	if f.cleanup != nil {
		return f.cleanup(f)
	}
	return nil
}

// kvFake is a fake with KV event sources.
type kvFake struct {
	fake
	sources func() []int
	pub     backend.EventPublisher
	event   any // published by every Generate
}

func (k *kvFake) KVEventSources() []int { return k.sources() }

func (k *kvFake) SetEventPublisher(p backend.EventPublisher) { k.pub = p }

func (k *kvFake) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	if k.event != nil {
		_ = k.pub.PublishKVEvent(ctx, 0, k.event)
	}
	return k.fake.Generate(ctx, req, emit)
}

// metricsFake is a fake that exports metrics.
type metricsFake struct {
	fake
	setup func(m backend.MetricsContext) ([]int, error)
}

func (m *metricsFake) SetupMetrics(mc backend.MetricsContext) ([]int, error) { return m.setup(mc) }

// healthFake is a fake with a canary request.
type healthFake struct {
	fake
	canary *backend.Request
}

func (h *healthFake) HealthCheckRequest() *backend.Request { return h.canary }

var errBroken = errors.New("broken engine")
