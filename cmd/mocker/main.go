// Command mocker runs the mocker engine as Dynamo workers: a CPU-only
// simulation of a vLLM-like engine (continuous batching, paged KV cache
// with prefix caching, realistic timing, KV events) that registers and
// serves exactly like a real worker.
//
//	mocker --model-path models/demo --speedup-ratio 10
//
// With --serve-vllm-api it is a vLLM server instead (package
// pkg/mocker/vllmapi): one engine behind vLLM's OpenAI-compatible HTTP API
// with token ids, and optionally vLLM's ZeroMQ KV event stream; no Dynamo
// runtime, discovery, NATS or etcd is used.
//
//	mocker --model-path models/demo --serve-vllm-api --vllm-port 8000 --kv-events-port 5557
//
// Flags and environment: mocker --help.
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
	"strconv"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dynamo-go/dynamo/cmd/internal/cli"
	"github.com/dynamo-go/dynamo/cmd/internal/envflag"
	"github.com/dynamo-go/dynamo/cmd/internal/gcfloor"
	"github.com/dynamo-go/dynamo/cmd/internal/obsflags"
	"github.com/dynamo-go/dynamo/cmd/internal/pprofserver"
	"github.com/dynamo-go/dynamo/cmd/internal/rungroup"
	"github.com/dynamo-go/dynamo/cmd/internal/workerflags"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/mocker"
	"github.com/dynamo-go/dynamo/pkg/mocker/modeldir"
	"github.com/dynamo-go/dynamo/pkg/mocker/vllmapi"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

func main() { os.Exit(run(os.Args[1:], os.Getenv, os.Stderr)) }

// envHelp is what mocker --help prints below the flags.
var envHelp = "\nEvery mocker flag can also be set as DYN_MOCKER_<FLAG> (e.g. DYN_MOCKER_SPEEDUP_RATIO=100).\n" +
	workerflags.EnvHelp +
	"  DYN_WORKER_GRACEFUL_SHUTDOWN_TIMEOUT  seconds after a signal before a forced exit with code 70 (30)\n" +
	"  DYN_PPROF_ADDR                      serve Go profiles (/debug/pprof/) on this address (off)\n" +
	gcfloor.EnvHelp +
	obsflags.EnvHelp

// run returns the exit code: 0 after a clean shutdown, 1 when a worker
// failed (the reason is printed), 2 for bad flags.
func run(args []string, env func(string) string, stderr io.Writer) int {
	c, code, done := configure(args, env, stderr)
	if done {
		return code
	}
	wcfg, mcfg, mf := c.worker, c.mocker, c.flags
	log := obsflags.Logger(stderr, env)
	wcfg.Logger = log
	mcfg.Logger = log
	mcfg.Exit = os.Exit

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	tp, err := telemetry.New(ctx, c.tracing)
	if err != nil {
		fmt.Fprintln(stderr, "mocker:", err)
		return 1
	}
	defer func() {
		if err := tp.Close(); err != nil {
			log.Warn("mocker: tracing", "err", err)
		}
	}()
	wcfg.TracerProvider = tp.TracerProvider()
	model, err := modeldir.Fill(ctx, &mcfg, wcfg, *mf.kvCacheDType, mf.canned, log)
	if err != nil {
		fmt.Fprintln(stderr, "mocker:", err)
		return 1
	}
	if err := mcfg.Validate(); err != nil {
		fmt.Fprintln(stderr, "mocker:", err)
		return 2
	}
	owners := []rungroup.Owner{
		forceExit(ctx, c.hardExit, stderr),
		func(ctx context.Context) error { return gcfloor.Run(ctx, c.gcFloorMiB, log) },
		func(ctx context.Context) error { return pprofserver.Run(ctx, env(pprofserver.Env), log) },
	}
	if *mf.serveVLLM {
		srv, err := newVLLMServer(c.vllm, mcfg, model, log)
		if err != nil {
			fmt.Fprintln(stderr, "mocker:", err)
			return 2
		}
		if err := rungroup.Run(ctx, append(owners, srv.Run)...); err != nil {
			fmt.Fprintln(stderr, "mocker:", err)
			return 1
		}
		return 0
	}
	for i := range *mf.numWorkers {
		rc := c.runtime
		if i > 0 {
			rc.SystemPort = runtime.SystemPortDisabled // one status server per process
		}
		mc := mcfg
		if port, ok := mf.bootstrapPort(i); ok {
			// Bound like the request plane: the advertised host when it
			// is loopback, every interface otherwise; the worker
			// advertises the runtime's host in the card.
			mc.BootstrapAddr = net.JoinHostPort(rc.TCPBindHost(), strconv.Itoa(port))
		}
		owners = append(owners, func(ctx context.Context) error { return runWorker(ctx, rc, wcfg, mc, log) })
	}
	// One failed worker takes the process down.
	if err := rungroup.Run(ctx, owners...); err != nil {
		fmt.Fprintln(stderr, "mocker:", runtime.WithAuthAdvice(err))
		return 1
	}
	return 0
}

// configuration is what the flags and the environment ask for.
type configuration struct {
	worker     worker.Config
	runtime    runtime.Config
	mocker     mocker.Config
	vllm       vllmapi.Config
	flags      *mockerFlags
	hardExit   time.Duration // DYN_WORKER_GRACEFUL_SHUTDOWN_TIMEOUT
	gcFloorMiB int           // DYN_GC_MIN_HEAP_MIB
	tracing    telemetry.Config
}

// configure reads the flags and the environment and checks that they
// agree. done says the process ends here with code: after --help or
// --version (0), or a bad setting (2, printed). What needs the model's
// files is checked later, once they are read.
func configure(args []string, env func(string) string, stderr io.Writer) (c configuration, code int, done bool) {
	fs := cli.NewFlagSet("mocker", stderr)
	wf := workerflags.Register(fs, env)
	mf := registerMocker(envflag.New(fs, env))
	if code, done := cli.Parse(fs, args, "usage: mocker --model-path DIR|ORG/NAME [flags]\n", envHelp); done {
		return c, code, true
	}
	bad := func(format string, a ...any) (configuration, int, bool) {
		fmt.Fprintf(stderr, "mocker: "+format+"\n", a...)
		return c, 2, true
	}
	c.flags = mf
	wcfg, rcfg, werr := wf.Configs()
	mcfg, mode, merr := mf.config()
	vcfg, verr := mf.vllmConfig()
	if err := errors.Join(werr, merr, verr); err != nil {
		return bad("%v", err)
	}
	if mode != "" {
		wf.SetMode(&wcfg, mode)
	}
	mcfg.DisaggregationMode = wcfg.DisaggregationMode
	if m := wcfg.DisaggregationMode; *mf.serveVLLM && (m == worker.ModePrefill || m == worker.ModeDecode) {
		return bad("--serve-vllm-api serves an aggregated engine (this one is %s)", m)
	}
	if mcfg.EmbeddingDim > 0 {
		if m := wcfg.DisaggregationMode; m == worker.ModePrefill || m == worker.ModeDecode {
			return bad("--embedding-dim serves an embedding model, which is not disaggregated (this worker is %s)", m)
		}
		wcfg.ModelTypes = []string{"embedding"}
	}
	if _, listens := mf.bootstrapPort(0); listens && wcfg.DisaggregationMode != worker.ModePrefill {
		return bad("--bootstrap-ports needs --disaggregation-mode prefill (this worker is %s)", wcfg.DisaggregationMode)
	}
	hardExit, err := seconds(env("DYN_WORKER_GRACEFUL_SHUTDOWN_TIMEOUT"), 30*time.Second)
	if err != nil {
		return bad("DYN_WORKER_GRACEFUL_SHUTDOWN_TIMEOUT: %v", err)
	}
	tcfg, err := obsflags.Tracing(env, "mocker")
	if err != nil {
		return bad("%v", err)
	}
	if c.gcFloorMiB, err = gcfloor.MiB(env(gcfloor.Env)); err != nil {
		return bad("%v", err)
	}
	c.worker, c.runtime, c.mocker, c.vllm, c.hardExit, c.tracing = wcfg, rcfg, mcfg, vcfg, hardExit, tcfg
	return c, 0, false
}

// forceExit is the owner that ends the process with code 70 when the
// shutdown a signal (the end of sig) started takes longer than d. It
// stops last, once everything else has returned.
func forceExit(sig context.Context, d time.Duration, stderr io.Writer) rungroup.Owner {
	return func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return nil
		case <-sig.Done():
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
			fmt.Fprintf(stderr, "mocker: shutdown took longer than %s; exiting\n", d)
			os.Exit(70)
		}
		return nil
	}
}

// runWorker runs one mocker worker with its own runtime (its own lease and
// instance id) until ctx ends; the runtime outlives the worker's drain. A
// failure of the runtime (a port in use, a lost lease) is the cause the
// worker's own error only echoes, and rungroup reports it first.
func runWorker(ctx context.Context, rcfg runtime.Config, wcfg worker.Config, mcfg mocker.Config, log *slog.Logger) error {
	rt, err := runtime.New(ctx, rcfg, runtime.Deps{Logger: log, Registry: prometheus.NewRegistry(), TracerProvider: wcfg.TracerProvider})
	if err != nil {
		return err
	}
	eng, err := mocker.New(mcfg)
	if err != nil {
		return errors.Join(err, rt.Close())
	}
	return rungroup.Run(ctx, rt.Run, func(ctx context.Context) error { return worker.Run(ctx, rt, eng, wcfg) })
}

// newVLLMServer builds the --serve-vllm-api server over a new engine.
func newVLLMServer(v vllmapi.Config, m mocker.Config, model *modeldir.Model, log *slog.Logger) (*vllmapi.Server, error) {
	eng, err := mocker.New(m)
	if err != nil {
		return nil, err
	}
	if err := model.FillVLLM(&v, m); err != nil {
		return nil, err
	}
	v.Logger = log
	return vllmapi.New(v, eng)
}

func seconds(v string, def time.Duration) (time.Duration, error) {
	if v == "" {
		return def, nil
	}
	s, err := strconv.ParseFloat(v, 64)
	if err != nil || s <= 0 {
		return 0, fmt.Errorf("%q: want a positive number of seconds", v)
	}
	return time.Duration(s * float64(time.Second)), nil
}
