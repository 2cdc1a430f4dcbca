// Command worker serves a real inference engine's HTTP server (vLLM,
// SGLang or llama.cpp, started beside it) as a Dynamo worker: it
// registers the model like any worker and forwards each request to the
// engine with token ids through pkg/bridge.
//
//	vllm serve Qwen/Qwen3-0.6B --port 8000 &
//	worker --engine vllm --engine-url http://127.0.0.1:8000 --model-path Qwen/Qwen3-0.6B
//
// Flags and environment: worker --help; engines and their flags:
// docs/engines.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dynamo-go/dynamo/cmd/internal/cli"
	"github.com/dynamo-go/dynamo/cmd/internal/envflag"
	"github.com/dynamo-go/dynamo/cmd/internal/gcfloor"
	"github.com/dynamo-go/dynamo/cmd/internal/obsflags"
	"github.com/dynamo-go/dynamo/cmd/internal/rungroup"
	"github.com/dynamo-go/dynamo/cmd/internal/workerflags"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/bridge"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

func main() { os.Exit(run(os.Args[1:], os.Getenv, os.Stderr)) }

// engineFlags are the worker's own flags; each can also be set as
// DYN_WORKER_<FLAG> (e.g. DYN_WORKER_ENGINE_URL).
type engineFlags struct {
	set           *envflag.Set
	engine        *string
	url           *string
	model         *string
	vllmAPI       *string
	startTimeout  *string
	contextLength *int
	kvBlockSize   *int
	dpSize        *int
	loadInterval  *string
	kvEndpoint    *string
	kvReplay      *string
	kvTopic       *string
}

func registerEngine(s *envflag.Set) *engineFlags {
	env := func(name string) string { return "DYN_WORKER_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")) }
	f := &engineFlags{
		set:    s,
		engine: s.String("engine", "", "engine dialect: vllm, sglang or llamacpp (required)", env("engine")),
		url:    s.String("engine-url", "", "the engine server's base URL, e.g. http://127.0.0.1:8000 (required)", env("engine-url")),
		model: s.String("engine-model", "", "the name the engine serves the model by (vLLM --served-model-name, else the path or hub id it loaded); a mismatch exits 1 "+
			"(default: --model-name or --model-path, either matching the engine's served name or model path, or by their last path element; '*' accepts any model); "+
			"only checked: the model is served as --model-name, else the name derived from --model-path", env("engine-model")),
		vllmAPI:       s.String("vllm-api", bridge.VLLMAPIAuto, "--engine vllm: auto (its token-in/token-out /inference/v1/generate when it streams there, probed at start, else /v1/completions with token ids), generate (required) or completions", env("vllm-api")),
		startTimeout:  s.String("engine-start-timeout", bridge.DefaultStartTimeout.String(), "how long to wait for the engine's /health before exiting 1 (a Go duration; model loads take minutes)", env("engine-start-timeout")),
		contextLength: s.Int("context-length", 0, "maximum prompt+output tokens (default: read from the engine)", env("context-length")),
		kvBlockSize:   s.Int("kv-block-size", 0, "the engine's KV-cache block size (vLLM --block-size, SGLang --page-size), for KV-aware routing (0 unknown)", env("kv-block-size")),
		dpSize:        s.Int("data-parallel-size", 1, "data-parallel ranks of the engine (KV events are published per rank)", env("data-parallel-size")),
		loadInterval:  s.String("engine-metrics-interval", bridge.DefaultLoadInterval.String(), "how often the engine's Prometheus /metrics is read for the load published to KV-aware routers (a Go duration; 0 off; llama.cpp needs --metrics)", env("engine-metrics-interval")),
	}
	f.kvEndpoint = s.String("kv-events-endpoint", "", "the engine's ZeroMQ KV-event publisher, tcp://host:port (vLLM/SGLang --kv-events-config endpoint), for KV-aware routing; "+
		"with --data-parallel-size N, rank r publishes on port+r (as vLLM and SGLang do); needs --kv-block-size", env("kv-events-endpoint"))
	f.kvReplay = s.String("kv-events-replay-endpoint", "", "the engine's KV-event replay socket, tcp://host:port (rank r: port+r): missed events are fetched from it (\"\" for none: a gap is logged and counted)", env("kv-events-replay-endpoint"))
	f.kvTopic = s.String("kv-events-topic", "", "topic of the engine's KV events (\"\" for all)", env("kv-events-topic"))
	return f
}

// models returns the names the engine must serve the model by:
// --engine-model, else --model-name and --model-path; none for '*'.
func (f *engineFlags) models(w worker.Config) []string {
	switch *f.model {
	case "*":
		return nil
	case "":
		var names []string
		for _, n := range []string{w.ModelName, w.ModelPath} {
			if n != "" {
				names = append(names, n)
			}
		}
		return names
	}
	return []string{*f.model}
}

// config folds the flags into a bridge.Config (without Logger and
// KVEvents).
func (f *engineFlags) config() (bridge.Config, error) {
	errs := []error{f.set.Err()}
	switch *f.engine {
	case bridge.DialectVLLM, bridge.DialectSGLang, bridge.DialectLlamaCpp:
	case "":
		errs = append(errs, errors.New("--engine is required: vllm, sglang or llamacpp"))
	default:
		errs = append(errs, fmt.Errorf("--engine %q: want vllm, sglang or llamacpp", *f.engine))
	}
	if *f.url == "" {
		errs = append(errs, errors.New("--engine-url is required (the engine server's base URL)"))
	}
	d, err := time.ParseDuration(*f.startTimeout)
	if err != nil || d <= 0 {
		errs = append(errs, fmt.Errorf("--engine-start-timeout %q: want a positive duration such as 10m", *f.startTimeout))
	}
	li, err := time.ParseDuration(*f.loadInterval)
	if err != nil || li < 0 {
		errs = append(errs, fmt.Errorf("--engine-metrics-interval %q: want a duration such as 1s, or 0 for off", *f.loadInterval))
	}
	if *f.dpSize < 1 {
		errs = append(errs, fmt.Errorf("--data-parallel-size %d: want at least 1", *f.dpSize))
	}
	switch *f.vllmAPI {
	case bridge.VLLMAPIAuto, bridge.VLLMAPIGenerate, bridge.VLLMAPICompletions:
		if *f.vllmAPI != bridge.VLLMAPIAuto && *f.engine != bridge.DialectVLLM {
			errs = append(errs, fmt.Errorf("--vllm-api %s needs --engine vllm", *f.vllmAPI))
		}
	default:
		errs = append(errs, fmt.Errorf("--vllm-api %q: want auto, generate or completions", *f.vllmAPI))
	}
	cfg := bridge.Config{Dialect: *f.engine, URL: *f.url, VLLMAPI: *f.vllmAPI, ContextLength: *f.contextLength,
		KVBlockSize: *f.kvBlockSize, StartTimeout: d, DataParallelSize: *f.dpSize, LoadInterval: li}
	if err := errors.Join(errs...); err != nil {
		return cfg, err
	}
	if _, err := bridge.New(cfg); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// usage and envHelp are what worker --help prints above and below the
// flags.
const usage = `usage: worker --engine vllm|sglang|llamacpp --engine-url URL --model-path DIR|ORG/NAME [flags]
       worker --engine llamacpp --engine-url URL --native-framework-processing [--model-path FILE.gguf] [flags]
`

var envHelp = "\nEvery engine flag can also be set as DYN_WORKER_<FLAG> (e.g. DYN_WORKER_ENGINE_URL). Engines: docs/engines.md.\n" +
	workerflags.EnvHelp + gcfloor.EnvHelp + obsflags.EnvHelp

// run returns the exit code: 0 after a clean shutdown, 1 when the worker
// failed (an engine that does not answer, a model mismatch), 2 for bad
// flags.
func run(args []string, env func(string) string, stderr io.Writer) int {
	c, code, done := configure(args, env, stderr)
	if done {
		return code
	}
	wcfg, bcfg, log := c.worker, c.bridge, c.log
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	tp, err := telemetry.New(ctx, c.tracing)
	if err != nil {
		fmt.Fprintln(stderr, "worker:", err)
		return 1
	}
	defer func() {
		if err := tp.Close(); err != nil {
			log.Warn("worker: tracing", "err", err)
		}
	}()
	wcfg.TracerProvider = tp.TracerProvider()
	gcCtx, gcStop := context.WithCancel(ctx)
	gcDone := make(chan struct{})
	go func() {
		defer close(gcDone)
		_ = gcfloor.Run(gcCtx, c.gcFloorMiB, log)
	}()
	defer func() { gcStop(); <-gcDone }()
	if err := runWorker(ctx, c.runtime, wcfg, bcfg, c.metrics, log); err != nil {
		if errors.Is(err, bridge.ErrModelMismatch) {
			err = fmt.Errorf("%w (--engine-model NAME: the name the engine serves it by; '*': accept any)", err)
		}
		fmt.Fprintln(stderr, "worker:", runtime.WithAuthAdvice(err))
		return 1
	}
	return 0
}

// configuration is what the flags and the environment ask for.
type configuration struct {
	worker     worker.Config
	runtime    runtime.Config
	bridge     bridge.Config
	tracing    telemetry.Config
	log        *slog.Logger
	metrics    *prometheus.Registry // the KV event subscribers' metrics are on it
	gcFloorMiB int                  // DYN_GC_MIN_HEAP_MIB
}

// configure reads the flags and the environment and checks that they
// agree. done says the process ends here with code: after --help or
// --version (0), or a bad setting (2, printed). Nothing is dialled: the
// engine and the KV event publisher are reached by run.
func configure(args []string, env func(string) string, stderr io.Writer) (c configuration, code int, done bool) {
	fs := cli.NewFlagSet("worker", stderr)
	wf := workerflags.Register(fs, env)
	ef := registerEngine(envflag.New(fs, env))
	pf := registerProcessing(envflag.New(fs, env))
	if code, done := cli.Parse(fs, args, usage, envHelp); done {
		return c, code, true
	}
	proc, perr := pf.processing(*ef.engine)
	wf.ModelPathOptional = nativeGGUF(*ef.engine, proc)
	wcfg, rcfg, werr := wf.Configs()
	bcfg, berr := ef.config()
	bcfg.Models = ef.models(wcfg)
	if !worker.HasModelFiles(wcfg.ModelPath) {
		werr = errors.Join(werr, modelFromEngine(&wcfg, *ef.engine, proc))
		if *ef.model == "" {
			bcfg.Models = nil // the engine's model is the card: nothing to compare
		}
	}
	// The public name is --model-name, else the one derived from
	// --model-path; the engine's own name is only matched (bcfg.Models).
	bcfg.Name = wcfg.ModelName
	if bcfg.Name == "" && wcfg.ModelPath != "" {
		bcfg.Name = modelcard.DefaultName(wcfg.ModelPath)
	}
	if m := wcfg.DisaggregationMode; m != worker.ModeAggregated {
		werr = errors.Join(werr, fmt.Errorf("--disaggregation-mode %s (or --is-%s-worker): cmd/worker serves aggregated engines only; "+
			"disaggregated serving through an engine's KV connector is not implemented (docs/engines.md)", m, m))
	}
	wcfg.Processing, bcfg.EngineText = proc, proc.Postprocessing == modelcard.ProcessingEngine
	if err := errors.Join(werr, berr, perr); err != nil {
		fmt.Fprintln(stderr, "worker:", err)
		return c, 2, true
	}
	log := obsflags.Logger(stderr, env)
	reg := prometheus.NewRegistry()
	kv, err := newKVEventSource(ef.kvEvents(), bcfg.KVBlockSize, reg, log)
	if err != nil {
		fmt.Fprintln(stderr, "worker:", err)
		return c, 2, true
	}
	tcfg, err := obsflags.Tracing(env, "worker")
	if err == nil {
		c.gcFloorMiB, err = gcfloor.MiB(env(gcfloor.Env))
	}
	if err != nil {
		fmt.Fprintln(stderr, "worker:", err)
		return c, 2, true
	}
	wcfg.Logger, bcfg.Logger, bcfg.KVEvents = log, log, kv
	c.worker, c.runtime, c.bridge, c.tracing, c.log, c.metrics = wcfg, rcfg, bcfg, tcfg, log, reg
	return c, 0, false
}

// runWorker serves the bridge engine with its own runtime until ctx ends.
// The engine and the runtime's dependencies (etcd, NATS) are waited for
// at the same time (see connect).
func runWorker(ctx context.Context, rcfg runtime.Config, wcfg worker.Config, bcfg bridge.Config, reg *prometheus.Registry, log *slog.Logger) error {
	if worker.HasModelFiles(wcfg.ModelPath) {
		v, err := vocabularyOf(ctx, wcfg)
		if err != nil {
			return err
		}
		bcfg.Vocabulary = v
	}
	bcfg.WaitAdvice = engineWaitAdvice
	b, err := bridge.New(bcfg)
	if err != nil {
		return err
	}
	eng, err := engineFor(ctx, b, wcfg)
	if err != nil {
		return err
	}
	deps := runtime.Deps{Logger: log, Registry: reg, TracerProvider: wcfg.TracerProvider}
	return connect(ctx, b, func(ctx context.Context) (*runtime.DistributedRuntime, error) { return runtime.New(ctx, rcfg, deps) },
		func(ctx context.Context, rt *runtime.DistributedRuntime, engineReady func(context.Context) error) error {
			return rungroup.Run(ctx, rt.Run, func(ctx context.Context) error {
				if err := engineReady(ctx); err != nil {
					return err
				}
				return worker.Run(ctx, rt, eng, wcfg)
			})
		})
}

// engineWaitAdvice is the advice on the line that says the worker waits
// for its engine.
const engineWaitAdvice = "--engine-url (DYN_WORKER_ENGINE_URL) sets where, --engine-start-timeout (DYN_WORKER_ENGINE_START_TIMEOUT) how long; " +
	"start the engine's server, or wait for its model to load"

// Why a wait was given up: the cause of the other wait's cancellation.
var (
	errEngineGaveUp  = errors.New("the worker gave up: its engine did not become ready")
	errRuntimeGaveUp = errors.New("the worker gave up: etcd or NATS was not reached")
)

// readiness waits for an engine (bridge.Engine.WaitReady).
type readiness interface {
	WaitReady(ctx context.Context) error
}

// connect waits for the engine (eng.WaitReady) and creates the runtime
// (newRuntime: runtime.New, which waits for etcd and NATS) at the same
// time, so that a missing engine and a missing etcd are reported
// together, each with its own waiting line. Once the runtime is up, serve
// runs with it at once (its Run keeps the lease alive) while the engine
// may still be loading: serve calls engineReady (called from one
// goroutine at a time) before it needs the engine. When either wait
// fails first, the other is given up and the error names both. The
// engine's wait is joined before connect returns.
func connect(ctx context.Context, eng readiness, newRuntime func(context.Context) (*runtime.DistributedRuntime, error),
	serve func(ctx context.Context, rt *runtime.DistributedRuntime, engineReady func(context.Context) error) error) error {
	engCtx, stopEngine := context.WithCancelCause(ctx)
	defer stopEngine(nil)
	engine := make(chan error, 1)
	go func() { engine <- eng.WaitReady(engCtx) }()

	rtCtx, stopRuntime := context.WithCancelCause(ctx)
	defer stopRuntime(nil)
	type result struct {
		rt  *runtime.DistributedRuntime
		err error
	}
	created := make(chan result, 1)
	go func() {
		rt, err := newRuntime(rtCtx)
		created <- result{rt, err}
	}()

	var engineErr error
	engineDone := false
	var r result
	select {
	case engineErr = <-engine:
		engineDone = true
		if engineErr != nil {
			stopRuntime(errEngineGaveUp)
			r = <-created
			if r.rt != nil {
				_ = r.rt.Close()
			}
			if r.err != nil {
				return fmt.Errorf("%w; and etcd/NATS were not reached either: %w", engineErr, r.err)
			}
			return fmt.Errorf("%w (etcd/NATS were reached)", engineErr)
		}
		r = <-created
	case r = <-created:
	}
	if r.err != nil {
		if !engineDone {
			stopEngine(errRuntimeGaveUp)
			engineErr = <-engine
		}
		if engineErr != nil {
			return fmt.Errorf("%w; and the engine: %w", r.err, engineErr)
		}
		return fmt.Errorf("%w (the engine was ready)", r.err)
	}
	// The runtime is up; the engine may still be loading. serve's
	// owners run now, and the one that needs the engine waits for it.
	defer func() {
		if !engineDone { // serve never waited: give the wait up, join it
			stopEngine(context.Canceled)
			<-engine
		}
	}()
	return serve(ctx, r.rt, func(ctx context.Context) error {
		if engineDone {
			return engineErr
		}
		select {
		case engineErr = <-engine:
		case <-ctx.Done():
			stopEngine(context.Cause(ctx))
			engineErr = <-engine
		}
		engineDone = true
		return engineErr
	})
}
