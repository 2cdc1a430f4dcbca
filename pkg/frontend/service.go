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

	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

// Service is the OpenAI-compatible HTTP frontend.
type Service struct {
	cfg      Config
	models   Models
	log      *slog.Logger
	registry *prometheus.Registry
	metrics  *Metrics
	clock    func() time.Time
	// refusals limits the log lines of refusals under overload.
	refusals *refusalLog
	tracer   trace.Tracer
	handler  http.Handler
	tenants  *tenants
	// store keeps the stored Responses; nil: storage is off.
	store ResponseStore
	// background are the background responses running here.
	background backgroundRuns

	shuttingDown atomic.Bool
	streams      atomic.Int64   // streamed /v1 requests in flight
	requests     sync.WaitGroup // /v1 requests in flight, streams that took their connections over included
	// returned takes connections back from streams that took them over
	// (detach.go); set by Run before it serves.
	returned *connQueue
	// hangups tells taken-over streams when their clients leave; set by
	// Run.
	hangups hangupWatcher
	// detached are the streams that took their connections over, so that
	// a drain that times out can end them (the server no longer sees them).
	detachedMu sync.Mutex
	detached   map[*exchange]struct{}
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
	s := &Service{cfg: cfg, models: deps.Models, log: deps.Logger, registry: deps.Registry, metrics: deps.Metrics, clock: deps.Clock, store: deps.ResponseStore,
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
	s.refusals = newRefusalLog(s.clock)
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
	newServer := func() *http.Server {
		return &http.Server{
			Handler:           s.handler,
			ReadHeaderTimeout: readHeaderTimeout,
			IdleTimeout:       idleTimeout,
			ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		}
	}
	srv := newServer()
	if tlsCert != "" {
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	// The connections that streams took over and gave back (detach.go)
	// are served by a server of their own: HTTP/1.1 only (a connection
	// is taken over only on HTTP/1.1), already through TLS if it is on.
	hw, err := newHangupWatcher()
	if err != nil {
		s.log.Warn("frontend: a goroutine will watch each stream's client", "error", err)
	}
	s.hangups = hw
	defer hw.close()
	s.background.open(ctx)
	back := newServer()
	back.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	s.returned = newConnQueue(ln.Addr())
	returnedErr := make(chan error, 1)
	go func() { returnedErr <- back.Serve(s.returned) }()
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
		gone, cancel := context.WithCancel(ctx)
		cancel()
		s.background.close(gone)
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
	var wg sync.WaitGroup
	for _, sv := range []*http.Server{srv, back} {
		wg.Go(func() {
			if err := sv.Shutdown(drainCtx); err != nil {
				s.log.Warn("frontend: drain timed out; closing the remaining connections", "err", err)
				_ = sv.Close()
			}
		})
	}
	wg.Wait()
	s.waitRequests(drainCtx)
	s.background.close(drainCtx)
	<-returnedErr
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("frontend: serve: %w", err)
	}
	return nil
}

// waitRequests waits for the /v1 requests in flight; when ctx ends first,
// it kills the streams that took their connections over (the server's
// Close does not reach them) and waits for them to end.
func (s *Service) waitRequests(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		s.requests.Wait()
		close(done)
	}()
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	s.detachedMu.Lock()
	for x := range s.detached {
		x.rc.Kill()
		_ = x.detached.conn.Close()
	}
	s.detachedMu.Unlock()
	<-done
}

// track adds (on) or removes a stream that took its connection over.
func (s *Service) track(x *exchange, on bool) {
	s.detachedMu.Lock()
	defer s.detachedMu.Unlock()
	if !on {
		delete(s.detached, x)
		return
	}
	if s.detached == nil {
		s.detached = map[*exchange]struct{}{}
	}
	s.detached[x] = struct{}{}
}
