// Package pprofserver serves Go's runtime profiles (net/http/pprof) on a
// separate address when an operator asks for it, for the binaries in cmd/.
package pprofserver

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// Env is the variable that enables the profile server: its value is the
// address to listen on (e.g. 127.0.0.1:6060). Empty: off.
const Env = "DYN_PPROF_ADDR"

// Run serves /debug/pprof/ on addr until ctx ends, then returns nil. An
// empty addr serves nothing and returns at once. Failures are logged,
// never fatal: profiles are a diagnostic.
func Run(ctx context.Context, addr string, log *slog.Logger) error {
	if addr == "" {
		return nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Warn("pprof: cannot listen", "addr", addr, "err", err)
		return nil
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	stop := context.AfterFunc(ctx, func() { _ = srv.Close() })
	defer stop()
	log.Info("pprof: serving profiles", "addr", ln.Addr().String())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("pprof: serve", "err", err)
	}
	return nil
}
