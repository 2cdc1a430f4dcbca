package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/dynamo-go/dynamo/internal/loadgen"
)

// baselineFlags are the flags of "bench baseline".
type baselineFlags struct {
	fs        *flag.FlagSet
	addr      *string
	ttft, itl *time.Duration
	maxTokens *int
	grace     *time.Duration
}

func newBaselineFlags(stderr io.Writer) *baselineFlags {
	fs := newFlagSet("baseline", "[flags]", stderr)
	return &baselineFlags{
		fs:        fs,
		addr:      fs.String("addr", "127.0.0.1:8100", "listen address"),
		ttft:      fs.Duration("ttft", 0, "delay before the first chunk"),
		itl:       fs.Duration("itl", 0, "delay between tokens (0 = as fast as possible)"),
		maxTokens: fs.Int("max-tokens", 16, "tokens for requests without max_tokens"),
		grace:     fs.Duration("shutdown-timeout", 10*time.Second, "how long open streams may finish after SIGINT/SIGTERM"),
	}
}

// baselineMain is "bench baseline": it serves loadgen.BaselineHandler
// until ctx ends, then shuts down gracefully. Exit 1 when the server
// fails, 2 for bad flags.
func baselineMain(ctx context.Context, args []string, _, stderr io.Writer) int {
	f := newBaselineFlags(stderr)
	if code := parseFlags(f.fs, args); code >= 0 {
		return code
	}
	if code := noArgs(f.fs); code >= 0 {
		return code
	}
	if *f.ttft < 0 || *f.itl < 0 || *f.maxTokens < 1 {
		fmt.Fprintln(stderr, "bench baseline: --ttft and --itl must not be negative, --max-tokens must be at least 1")
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if err := serveBaseline(ctx, f, log); err != nil {
		fmt.Fprintf(stderr, "bench baseline: %v\n", err)
		return 1
	}
	return 0
}

func serveBaseline(ctx context.Context, f *baselineFlags, log *slog.Logger) error {
	ln, err := net.Listen("tcp", *f.addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{
		Handler: loadgen.BaselineHandler(loadgen.BaselineOptions{
			TTFT: *f.ttft, ITL: *f.itl, DefaultMaxTokens: *f.maxTokens,
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("baseline listening", "addr", ln.Addr().String(), "ttft", *f.ttft, "itl", *f.itl)

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("baseline shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), *f.grace)
	defer cancel()
	err = srv.Shutdown(shutdownCtx)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
