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

	"github.com/dynamo-go/dynamo/pkg/migration"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// Service is the OpenAI-compatible HTTP frontend.
type Service struct {
	cfg      Config
	rt       *runtime.DistributedRuntime
	log      *slog.Logger
	registry *prometheus.Registry
	metrics  *Metrics
	migMet   *migration.Metrics
	kv       *kvShared // KV routing metrics (router mode kv)
	clock    func() time.Time
	models   *registry
	handler  http.Handler

	shuttingDown atomic.Bool
	requests     sync.WaitGroup // handlers of /v1 requests in flight
}

// New returns a service; Run starts it.
func New(cfg Config, deps Deps) (*Service, error) {
	if deps.Runtime == nil {
		return nil, errors.New("frontend: Deps.Runtime is required")
	}
	cfg = cfg.withDefaults()
	switch cfg.RouterMode {
	case RouterRoundRobin, RouterRandom, RouterKV:
	default:
		return nil, fmt.Errorf("frontend: unknown router mode %q (want %s, %s or %s)", cfg.RouterMode, RouterRoundRobin, RouterRandom, RouterKV)
	}
	s := &Service{cfg: cfg, rt: deps.Runtime, log: deps.Logger, registry: deps.Registry, clock: deps.Clock, models: newRegistry()}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.registry == nil {
		s.registry = prometheus.NewRegistry()
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	m, err := NewMetrics(s.registry, MetricsConfig{Prefix: cfg.MetricsPrefix, Env: cfg.MetricsEnv})
	if err != nil {
		return nil, fmt.Errorf("frontend: metrics: %w", err)
	}
	s.metrics = m
	if s.migMet, err = migration.NewMetrics(s.registry, sanitizeMetricsPrefix(cfg.MetricsPrefix)); err != nil {
		return nil, fmt.Errorf("frontend: metrics: %w", err)
	}
	if cfg.RouterMode == RouterKV {
		if s.kv, err = newKVShared(s.registry); err != nil {
			return nil, fmt.Errorf("frontend: metrics: %w", err)
		}
	}
	s.handler = s.routes(promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}))
	return s, nil
}

// Handler returns the service's HTTP handler.
func (s *Service) Handler() http.Handler { return s.handler }

// Run serves HTTP on ln (TLS when both paths are given) and watches model
// discovery until ctx ends. Then /health and /live answer 503 for the
// grace period while requests are still served, the server stops
// accepting and waits up to the drain timeout for in-flight requests, and
// kills the rest.
func (s *Service) Run(ctx context.Context, ln net.Listener, tlsCert, tlsKey string) error {
	watchCtx, stopWatch := context.WithCancel(context.Background())
	watchDone := make(chan error, 1)
	go func() { watchDone <- s.watchModels(watchCtx) }()
	defer func() {
		stopWatch()
		<-watchDone
		for _, m := range s.models.list() {
			m.kv.close()
		}
	}()

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
	s.log.Info("frontend: listening", "addr", ln.Addr().String(), "tls", tlsCert != "")

	select {
	case err := <-serveErr:
		return fmt.Errorf("frontend: serve: %w", err)
	case err := <-watchDone:
		watchDone <- err // for the deferred wait
		_ = srv.Close()
		if err == nil {
			err = errors.New("discovery watch ended")
		}
		return fmt.Errorf("frontend: %w", err)
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
