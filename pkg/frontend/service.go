package frontend

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"go.opentelemetry.io/otel/trace"

	"github.com/dynamo-go/dynamo/pkg/pipeline"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

// models is what the HTTP layer asks of the served models
// (*pipeline.Registry).
type models interface {
	Lookup(name string) *pipeline.Model
	Models() []*pipeline.Model
	Synced() bool
	Instances() []runtime.Instance
	Discovery() runtime.DiscoveryStatus
}

var _ models = (*pipeline.Registry)(nil)

// Service is the OpenAI-compatible HTTP frontend.
type Service struct {
	cfg      Config
	models   models
	log      *slog.Logger
	registry *prometheus.Registry
	metrics  *Metrics
	clock    func() time.Time
	tracer   trace.Tracer
	handler  http.Handler
	tenants  *tenants

	shuttingDown atomic.Bool
	requests     sync.WaitGroup // handlers of /v1 requests in flight
}

// New returns a service; Run starts it.
func New(cfg Config, deps Deps) (*Service, error) {
	if deps.Models == nil {
		return nil, errors.New("frontend: Deps.Models is required")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &Service{cfg: cfg, models: deps.Models, log: deps.Logger, registry: deps.Registry, metrics: deps.Metrics, clock: deps.Clock,
		tracer:  telemetry.Tracer(deps.TracerProvider, "github.com/dynamo-go/dynamo/pkg/frontend"),
		tenants: newTenants(cfg.TenantMaxInflight, cfg.TenantHeader)}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.registry == nil {
		s.registry = prometheus.NewRegistry()
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	if s.metrics == nil {
		m, err := NewMetrics(s.registry, MetricsConfig{})
		if err != nil {
			return nil, fmt.Errorf("frontend: metrics: %w", err)
		}
		s.metrics = m
	}
	s.handler = s.routes(promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}))
	return s, nil
}

// Handler returns the service's HTTP handler.
func (s *Service) Handler() http.Handler { return s.handler }

// Run serves HTTP on ln (TLS when both paths are given) until ctx ends.
// Then /health and /live answer 503 for the grace period while requests
// are still served, the server stops accepting and waits up to the drain
// timeout for in-flight requests, and kills the rest. It returns nil after
// that clean stop.
func (s *Service) Run(ctx context.Context, ln net.Listener, tlsCert, tlsKey string) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	if tlsCert != "" {
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	serveErr := make(chan error, 1)
	go func() {
		var err error
		if tlsCert != "" {
			err = srv.ServeTLS(ln, tlsCert, tlsKey)
		} else {
			err = srv.Serve(ln)
		}
		serveErr <- err
	}()
	s.log.Info("frontend: listening", "addr", ln.Addr().String(), "tls", tlsCert != "",
		"api_keys", len(s.cfg.APIKeys), "cors_origins", s.cfg.CORSAllowedOrigins)

	select {
	case err := <-serveErr:
		return fmt.Errorf("frontend: serve: %w", err)
	case <-ctx.Done():
	}
	s.shuttingDown.Store(true)
	s.log.Info("frontend: shutting down", "grace", s.cfg.ShutdownGrace, "drain_timeout", s.cfg.DrainTimeout)
	if s.cfg.ShutdownGrace > 0 {
		time.Sleep(s.cfg.ShutdownGrace)
	}
	drainCtx, cancel := context.WithTimeout(context.Background(), s.cfg.DrainTimeout)
	defer cancel()
	if err := srv.Shutdown(drainCtx); err != nil {
		s.log.Warn("frontend: drain timed out; closing the remaining connections", "err", err)
		_ = srv.Close()
	}
	s.requests.Wait()
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("frontend: serve: %w", err)
	}
	return nil
}
