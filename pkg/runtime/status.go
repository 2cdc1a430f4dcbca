package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// statusServer serves /health, /live and /metrics for the process
// (DYN_SYSTEM_PORT; 0 is any free port, logged once bound).
type statusServer struct {
	ln  net.Listener
	srv *http.Server
}

func (rt *DistributedRuntime) statusServer() (*statusServer, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.status != nil {
		return rt.status, nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(rt.cfg.SystemHost, strconv.Itoa(rt.cfg.SystemPort)))
	if err != nil {
		return nil, fmt.Errorf("runtime: status server: %w", err)
	}
	// With port 0 the kernel picks the port: this line is how an operator,
	// or a test that started the process, learns it.
	rt.log.Info("runtime: status server listening", "addr", ln.Addr().String())
	mux := http.NewServeMux()
	healthz := func(w http.ResponseWriter, _ *http.Request) {
		rep, ok := rt.health.report()
		w.Header().Set("Content-Type", "application/json")
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(statusBody{HealthReport: rep, Discovery: rt.DiscoveryStatus()})
	}
	mux.HandleFunc("GET "+rt.cfg.HealthPath, healthz)
	if rt.cfg.LivePath != rt.cfg.HealthPath {
		mux.HandleFunc("GET "+rt.cfg.LivePath, healthz)
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(rt.registry, promhttp.HandlerOpts{}))
	rt.status = &statusServer{
		ln:  ln,
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
	}
	return rt.status, nil
}

// statusBody is the JSON of /health and /live: the health report and the
// link to discovery (an outage does not change the status code).
type statusBody struct {
	HealthReport
	Discovery DiscoveryStatus `json:"discovery"`
}

// StatusAddr returns the status server's address once Run started it, or
// "" when it is disabled.
func (rt *DistributedRuntime) StatusAddr() string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.status == nil {
		return ""
	}
	return rt.status.ln.Addr().String()
}

func (s *statusServer) run(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = s.srv.Shutdown(sctx)
	})
	defer stop()
	if err := s.srv.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
