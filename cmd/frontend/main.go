// Command frontend serves the OpenAI-compatible HTTP API
// (/v1/chat/completions, /v1/completions, /v1/models) for every model its
// workers publish in discovery.
//
//	frontend --http-port 8000 --discovery-backend etcd --request-plane tcp
//
// Flags and environment: frontend --help.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/trace"

	"github.com/dynamo-go/dynamo/cmd/internal/cli"
	"github.com/dynamo-go/dynamo/cmd/internal/envflag"
	"github.com/dynamo-go/dynamo/cmd/internal/gcfloor"
	"github.com/dynamo-go/dynamo/cmd/internal/obsflags"
	"github.com/dynamo-go/dynamo/cmd/internal/pprofserver"
	"github.com/dynamo-go/dynamo/cmd/internal/rungroup"
	"github.com/dynamo-go/dynamo/internal/runtimeflags"
	"github.com/dynamo-go/dynamo/pkg/frontend"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

func main() { os.Exit(run(os.Args[1:], os.Getenv, os.Stderr, nil)) }

// run returns the exit code: 0 after a clean shutdown, 1 on a failure
// (printed), 2 for bad flags. ready, when not nil, receives the listening
// address.
func run(args []string, env func(string) string, stderr io.Writer, ready chan<- string) int {
	c, code, done := configure(args, env, stderr)
	if done {
		return code
	}
	log := obsflags.Logger(stderr, env)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	tp, err := telemetry.New(ctx, c.tracing)
	if err != nil {
		fmt.Fprintln(stderr, "frontend:", err)
		return 1
	}
	defer func() {
		if err := tp.Close(); err != nil {
			log.Warn("frontend: tracing", "err", err)
		}
	}()
	if err := serve(ctx, c.settings, c.runtime, env(pprofserver.Env), log, tp.TracerProvider(), ready); err != nil {
		fmt.Fprintln(stderr, "frontend:", runtime.WithAuthAdvice(err))
		return 1
	}
	return 0
}

// configuration is what the flags and the environment ask for.
type configuration struct {
	settings settings
	runtime  runtime.Config
	tracing  telemetry.Config
}

// configure reads the flags and the environment. done says the process
// ends here with code: after --help or --version (0), or a bad setting
// (2, printed).
func configure(args []string, env func(string) string, stderr io.Writer) (c configuration, code int, done bool) {
	fs := cli.NewFlagSet("frontend", stderr)
	f := register(envflag.New(fs, env))
	rf := runtimeflags.Register(fs, env)
	if code, done := cli.Parse(fs, args, "usage: frontend [flags]\n", envHelp+runtimeflags.EnvHelp+obsflags.EnvHelp); done {
		return c, code, true
	}
	var serr, rerr, terr error
	c.settings, serr = f.settings(env)
	c.runtime, rerr = rf.Config()
	c.tracing, terr = obsflags.Tracing(env, "frontend")
	if err := errors.Join(serr, rerr, terr); err != nil {
		fmt.Fprintln(stderr, "frontend:", err)
		return c, 2, true
	}
	c.runtime.SystemPort = runtime.SystemPortDisabled // the frontend serves /health and /metrics itself
	return c, 0, false
}

// serve builds the process's owners and runs them until ctx ends: the
// runtime, the model registry that follows discovery, and the HTTP
// service, stopped in the reverse order (see rungroup).
func serve(ctx context.Context, s settings, rcfg runtime.Config, pprofAddr string, log *slog.Logger, tp trace.TracerProvider, ready chan<- string) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// The runtime's metrics share the frontend's /metrics: the worker-side
	// ones stay empty here; the discovery ones tell an etcd outage.
	rt, err := runtime.New(ctx, rcfg, runtime.Deps{Logger: log, Registry: reg, TracerProvider: tp})
	if err != nil {
		return err
	}
	met, err := frontend.NewMetrics(reg, s.metrics)
	if err != nil {
		return errors.Join(err, rt.Close())
	}
	models, err := pipeline.New(s.models, pipeline.Deps{Runtime: rt, Logger: log, Registry: reg, Metrics: met, TracerProvider: tp})
	if err != nil {
		return errors.Join(err, rt.Close())
	}
	store, runStore, closeStore, err := responseStore(s.responses, rcfg, log)
	if err != nil {
		return errors.Join(err, rt.Close())
	}
	defer closeStore()
	svc, err := frontend.New(s.http, frontend.Deps{Models: frontend.ServeRegistry(models), Logger: log, Registry: reg, Metrics: met, TracerProvider: tp, ResponseStore: store})
	if err != nil {
		return errors.Join(err, rt.Close())
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return errors.Join(err, rt.Close())
	}
	if ready != nil {
		ready <- ln.Addr().String()
	}
	owners := []rungroup.Owner{
		func(ctx context.Context) error { return gcfloor.Run(ctx, s.gcFloorMiB, log) },
		func(ctx context.Context) error { return pprofserver.Run(ctx, pprofAddr, log) },
		rt.Run,
		models.Run,
	}
	if runStore != nil {
		// Before the service: it stops after it (rungroup's reverse
		// order), once the last response is written.
		owners = append(owners, runStore)
	}
	owners = append(owners, func(ctx context.Context) error { return svc.Run(ctx, ln, s.tlsCert, s.tlsKey) })
	return rungroup.Run(ctx, owners...)
}
