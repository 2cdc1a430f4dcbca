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
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/dynamo-go/dynamo/internal/pprofserver"
	"github.com/dynamo-go/dynamo/internal/runtimeflags"
	"github.com/dynamo-go/dynamo/pkg/frontend"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

func main() { os.Exit(run(os.Args[1:], os.Getenv, os.Stderr, nil)) }

// run returns the exit code: 0 after a clean shutdown, 1 on a failure
// (printed), 2 for bad flags. ready, when not nil, receives the listening
// address.
func run(args []string, env func(string) string, stderr io.Writer, ready chan<- string) int {
	fs := flag.NewFlagSet("frontend", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := register(fs, env)
	rf := runtimeflags.Register(fs, env)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: frontend [flags]")
		fs.PrintDefaults()
		fmt.Fprint(stderr, envHelp)
		fmt.Fprint(stderr, runtimeflags.EnvHelp)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "frontend: unexpected arguments %q\n", fs.Args())
		return 2
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	cfg, addr, tlsCert, tlsKey, ferr := f.config(set)
	rcfg, rerr := rf.Config()
	if err := errors.Join(ferr, rerr); err != nil {
		fmt.Fprintln(stderr, "frontend:", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: logLevel(env("DYN_LOG"))}))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	pprofserver.Run(ctx, env(pprofserver.Env), log)
	if err := serve(ctx, cfg, rcfg, addr, tlsCert, tlsKey, log, ready); err != nil {
		fmt.Fprintln(stderr, "frontend:", err)
		return 1
	}
	return 0
}

// serve runs the runtime and the HTTP service until ctx ends.
func serve(ctx context.Context, cfg frontend.Config, rcfg runtime.Config, addr, tlsCert, tlsKey string, log *slog.Logger, ready chan<- string) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	rcfg.SystemPort = runtime.SystemPortDisabled // the frontend serves /health and /metrics itself
	rt, err := runtime.New(ctx, rcfg, runtime.Deps{Logger: log, Registry: prometheus.NewRegistry()})
	if err != nil {
		return err
	}
	runCtx, cancelRun := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- rt.Run(runCtx) }()
	defer func() {
		cancelRun()
		<-runDone
	}()
	svc, err := frontend.New(cfg, frontend.Deps{Runtime: rt, Logger: log, Registry: reg})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if ready != nil {
		ready <- ln.Addr().String()
	}
	return svc.Run(ctx, ln, tlsCert, tlsKey)
}

// flags holds the frontend's own flags.
type flags struct {
	env             func(string) string
	host            *string
	port            *int
	tlsCert, tlsKey *string
	namespace       *string
	routerMode      *string
	blockSize       *int
	migrationLimit  *int
	migrationMaxSeq *int
	metricsPrefix   *string
	kvWeight        *float64
	kvWeightAlias   *float64
	temperature     *float64
	kvEvents        *bool
	noKVEvents      *bool
	ttlSecs         *float64
	replicaSync     *bool
	trackBlocks     *bool
	noTrackBlocks   *bool
	busyDecode      *float64
	busyPrefill     *int64
	busyPrefillFrac *float64
}

func register(fs *flag.FlagSet, env func(string) string) *flags {
	return &flags{
		env:             env,
		host:            fs.String("http-host", or(env("DYN_HTTP_HOST"), "0.0.0.0"), "address to listen on [env DYN_HTTP_HOST]"),
		port:            fs.Int("http-port", 8000, "port to listen on [env DYN_HTTP_PORT]"),
		tlsCert:         fs.String("tls-cert-path", env("DYN_TLS_CERT_PATH"), "TLS certificate (PEM); serve HTTPS with --tls-key-path [env DYN_TLS_CERT_PATH]"),
		tlsKey:          fs.String("tls-key-path", env("DYN_TLS_KEY_PATH"), "TLS private key (PEM) [env DYN_TLS_KEY_PATH]"),
		namespace:       fs.String("namespace", env("DYN_NAMESPACE"), "serve only the models of this namespace; empty serves all [env DYN_NAMESPACE]"),
		routerMode:      fs.String("router-mode", or(env("DYN_ROUTER_MODE"), frontend.RouterRoundRobin), "how to pick a worker: round-robin, random, or kv (by cached prefix and load) [env DYN_ROUTER_MODE]"),
		blockSize:       fs.Int("kv-cache-block-size", 0, "KV cache block size in tokens; 0 takes the model card's [env DYN_KV_CACHE_BLOCK_SIZE]"),
		migrationLimit:  fs.Int("migration-limit", 0, "times a broken stream may move to another worker; overrides the model cards' limit when given [env DYN_MIGRATION_LIMIT]"),
		migrationMaxSeq: fs.Int("migration-max-seq-len", 0, "longest sequence (prompt + generated) a migration may re-issue; 0 is no bound [env DYN_MIGRATION_MAX_SEQ_LEN]"),
		metricsPrefix:   fs.String("metrics-prefix", or(env("DYN_METRICS_PREFIX"), "dynamo_frontend"), "prefix of the metric names [env DYN_METRICS_PREFIX]"),
		kvWeight:        fs.Float64("kv-overlap-score-weight", 1.0, "router mode kv: weight of cached prefix blocks against load [env DYN_KV_OVERLAP_SCORE_WEIGHT]"),
		kvWeightAlias:   fs.Float64("router-kv-overlap-score-weight", 1.0, "same as --kv-overlap-score-weight"),
		temperature:     fs.Float64("router-temperature", 0, "router mode kv: 0 picks the cheapest worker, > 0 samples by softmax over costs [env DYN_ROUTER_TEMPERATURE]"),
		kvEvents:        fs.Bool("kv-events", true, "router mode kv: follow the workers' KV events (needs NATS) [env DYN_KV_EVENTS]"),
		noKVEvents:      fs.Bool("no-kv-events", false, "router mode kv: route without KV events (approximate mode: routing decisions stand in for them)"),
		ttlSecs:         fs.Float64("router-ttl-secs", 120, "approximate mode: seconds a routed prompt counts as cached [env DYN_ROUTER_TTL_SECS]"),
		replicaSync:     fs.Bool("router-replica-sync", false, "router mode kv: share active load with the other frontends over NATS [env DYN_ROUTER_REPLICA_SYNC]"),
		trackBlocks:     fs.Bool("track-active-blocks", true, "router mode kv: count the blocks of active requests as load [env DYN_ROUTER_TRACK_ACTIVE_BLOCKS]"),
		noTrackBlocks:   fs.Bool("no-track-active-blocks", false, "same as --track-active-blocks=false"),
		busyDecode:      fs.Float64("active-decode-blocks-threshold", -1, "router mode kv: a worker whose active KV blocks exceed this fraction of its cache is busy and skipped; -1 is off [env DYN_ACTIVE_DECODE_BLOCKS_THRESHOLD]"),
		busyPrefill:     fs.Int64("active-prefill-tokens-threshold", -1, "router mode kv: a worker with more queued prefill tokens is busy; -1 is off [env DYN_ACTIVE_PREFILL_TOKENS_THRESHOLD]"),
		busyPrefillFrac: fs.Float64("active-prefill-tokens-threshold-frac", -1, "router mode kv: same, as a fraction of the worker's max batched tokens; -1 is off [env DYN_ACTIVE_PREFILL_TOKENS_THRESHOLD_FRAC]"),
	}
}

const envHelp = `HTTP environment:
  DYN_HTTP_BODY_LIMIT_MB                   largest request body in MiB (45)
  DYN_HTTP_GRACEFUL_SHUTDOWN_TIMEOUT_SECS  /health answers 503 this long before draining (5)
  DYN_HTTP_DRAIN_TIMEOUT_SECS              in-flight requests may finish this long (30)
  DYN_HTTP_BACKEND_STREAM_TIMEOUT_SECS     longest wait for a worker's next item (none)
  DYN_HTTP_OVERLOAD_STATUS_CODE            status for overload rejections (503)
  DYN_ENABLE_FORCE_INCLUDE_USAGE           always send the usage chunk (false)
  DYN_IGNORE_OPENAI_FE_UNSUPPORTED_FIELDS  ignore unknown request fields instead of refusing them (false)
  DYN_DISABLE_FRONTEND_NVEXT               refuse the nvext extension (false)
  DYN_METRICS_<NAME>_{MIN,MAX,COUNT}       histogram buckets (see docs)
  DYN_LOG                                  log level: debug, info, warn, error (info)
  DYN_PPROF_ADDR                           serve Go profiles (/debug/pprof/) on this address (off)
`

// config validates the flags and the HTTP environment. set holds the
// flags given on the command line (a flag beats its env variable).
func (f *flags) config(set map[string]bool) (cfg frontend.Config, addr, tlsCert, tlsKey string, err error) {
	var errs []error
	intFrom := func(flagName, envName string, v *int) int {
		if set[flagName] {
			return *v
		}
		if s := f.env(envName); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: not an integer", envName, s))
			}
			return n
		}
		return *v
	}
	port := intFrom("http-port", "DYN_HTTP_PORT", f.port)
	if port < 0 || port > 65535 {
		errs = append(errs, fmt.Errorf("--http-port %d: out of range 0-65535", port))
	}
	if (*f.tlsCert == "") != (*f.tlsKey == "") {
		errs = append(errs, errors.New("--tls-cert-path and --tls-key-path must be given together"))
	}
	for _, p := range []string{*f.tlsCert, *f.tlsKey} {
		if p != "" {
			if _, err := os.Stat(p); err != nil {
				errs = append(errs, fmt.Errorf("TLS file: %w", err))
			}
		}
	}
	switch *f.routerMode {
	case frontend.RouterRoundRobin, frontend.RouterRandom, frontend.RouterKV:
	default:
		errs = append(errs, fmt.Errorf("--router-mode %q: want round-robin, random or kv", *f.routerMode))
	}
	floatFrom := func(names []string, envNames []string, v *float64) *float64 {
		for _, n := range names {
			if set[n] {
				return v
			}
		}
		for _, e := range envNames {
			if s := f.env(e); s != "" {
				x, err := strconv.ParseFloat(s, 64)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s=%q: not a number", e, s))
				}
				return &x
			}
		}
		return nil
	}
	weight := floatFrom([]string{"kv-overlap-score-weight"}, []string{"DYN_KV_OVERLAP_SCORE_WEIGHT", "DYN_ROUTER_KV_OVERLAP_SCORE_WEIGHT", "DYN_OVERLAP_SCORE_WEIGHT"}, f.kvWeight)
	if set["router-kv-overlap-score-weight"] {
		weight = f.kvWeightAlias
	}
	if weight != nil && *weight < 0 {
		errs = append(errs, fmt.Errorf("--kv-overlap-score-weight %v: must not be negative", *weight))
	}
	cfg.KV.OverlapScoreWeight = weight
	if t := floatFrom([]string{"router-temperature"}, []string{"DYN_ROUTER_TEMPERATURE"}, f.temperature); t != nil {
		if *t < 0 {
			errs = append(errs, fmt.Errorf("--router-temperature %v: must not be negative", *t))
		}
		cfg.KV.Temperature = *t
	}
	boolEnv := func(flagName, envName string, v *bool) bool {
		if set[flagName] {
			return *v
		}
		if s := strings.ToLower(f.env(envName)); s != "" {
			switch s {
			case "1", "true", "yes", "on":
				return true
			case "0", "false", "no", "off":
				return false
			}
			errs = append(errs, fmt.Errorf("%s=%q: want true or false", envName, s))
		}
		return *v
	}
	events := boolEnv("kv-events", "DYN_KV_EVENTS", f.kvEvents)
	if f.env("DYN_ROUTER_USE_KV_EVENTS") != "" && !set["kv-events"] {
		events = boolEnv("kv-events", "DYN_ROUTER_USE_KV_EVENTS", f.kvEvents)
	}
	cfg.KV.NoEvents = !events || *f.noKVEvents
	if ttl := floatFrom([]string{"router-ttl-secs"}, []string{"DYN_ROUTER_TTL_SECS"}, f.ttlSecs); ttl != nil {
		if *ttl <= 0 {
			errs = append(errs, fmt.Errorf("--router-ttl-secs %v: must be positive", *ttl))
		}
		cfg.KV.TTL = time.Duration(*ttl * float64(time.Second))
	}
	cfg.KV.ReplicaSync = boolEnv("router-replica-sync", "DYN_ROUTER_REPLICA_SYNC", f.replicaSync)
	cfg.KV.NoTrackActiveBlocks = !boolEnv("track-active-blocks", "DYN_ROUTER_TRACK_ACTIVE_BLOCKS", f.trackBlocks) || *f.noTrackBlocks
	if v := floatFrom([]string{"active-decode-blocks-threshold"}, []string{"DYN_ACTIVE_DECODE_BLOCKS_THRESHOLD"}, f.busyDecode); v != nil && *v >= 0 {
		cfg.KV.Busy.ActiveDecodeBlocks = v
	}
	if v := floatFrom([]string{"active-prefill-tokens-threshold-frac"}, []string{"DYN_ACTIVE_PREFILL_TOKENS_THRESHOLD_FRAC"}, f.busyPrefillFrac); v != nil && *v >= 0 {
		cfg.KV.Busy.ActivePrefillTokensFrac = v
	}
	if p := float64(*f.busyPrefill); set["active-prefill-tokens-threshold"] && p >= 0 {
		n := uint64(p)
		cfg.KV.Busy.ActivePrefillTokens = &n
	} else if v := floatFrom(nil, []string{"DYN_ACTIVE_PREFILL_TOKENS_THRESHOLD"}, nil); v != nil && *v >= 0 {
		n := uint64(*v)
		cfg.KV.Busy.ActivePrefillTokens = &n
	}
	if err := cfg.KV.Busy.Validate(); err != nil {
		errs = append(errs, err)
	}
	cfg.Namespace = *f.namespace
	cfg.RouterMode = *f.routerMode
	cfg.KVCacheBlockSize = intFrom("kv-cache-block-size", "DYN_KV_CACHE_BLOCK_SIZE", f.blockSize)
	if cfg.KVCacheBlockSize < 0 {
		errs = append(errs, fmt.Errorf("--kv-cache-block-size %d: must not be negative", cfg.KVCacheBlockSize))
	}
	if set["migration-limit"] || f.env("DYN_MIGRATION_LIMIT") != "" {
		n := intFrom("migration-limit", "DYN_MIGRATION_LIMIT", f.migrationLimit)
		if n < 0 || n > 1<<32-1 {
			errs = append(errs, fmt.Errorf("--migration-limit %d: out of range 0-4294967295", n))
		}
		cfg.MigrationLimit = &n
	}
	cfg.MigrationMaxSeqLen = intFrom("migration-max-seq-len", "DYN_MIGRATION_MAX_SEQ_LEN", f.migrationMaxSeq)
	if cfg.MigrationMaxSeqLen < 0 {
		errs = append(errs, fmt.Errorf("--migration-max-seq-len %d: must not be negative", cfg.MigrationMaxSeqLen))
	}
	cfg.MetricsPrefix = *f.metricsPrefix
	cfg.MetricsEnv = f.env

	envInt := func(name string, def int) int {
		s := f.env(name)
		if s == "" {
			return def
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a non-negative integer", name, s))
		}
		return n
	}
	envBool := func(name string) bool {
		s := strings.ToLower(f.env(name))
		switch s {
		case "", "0", "false", "no", "off":
			return false
		case "1", "true", "yes", "on":
			return true
		}
		errs = append(errs, fmt.Errorf("%s=%q: want true or false", name, s))
		return false
	}
	cfg.BodyLimit = int64(envInt("DYN_HTTP_BODY_LIMIT_MB", 45)) << 20
	if cfg.BodyLimit == 0 {
		errs = append(errs, errors.New("DYN_HTTP_BODY_LIMIT_MB must be at least 1"))
	}
	if g := envInt("DYN_HTTP_GRACEFUL_SHUTDOWN_TIMEOUT_SECS", 5); g == 0 {
		cfg.ShutdownGrace = -1
	} else {
		cfg.ShutdownGrace = time.Duration(g) * time.Second
	}
	cfg.DrainTimeout = time.Duration(envInt("DYN_HTTP_DRAIN_TIMEOUT_SECS", 30)) * time.Second
	cfg.StreamTimeout = time.Duration(envInt("DYN_HTTP_BACKEND_STREAM_TIMEOUT_SECS", 0)) * time.Second
	cfg.OverloadStatus = envInt("DYN_HTTP_OVERLOAD_STATUS_CODE", 503)
	if cfg.OverloadStatus < 400 || cfg.OverloadStatus > 599 {
		errs = append(errs, fmt.Errorf("DYN_HTTP_OVERLOAD_STATUS_CODE %d: want a 4xx or 5xx status", cfg.OverloadStatus))
	}
	cfg.ForceIncludeUsage = envBool("DYN_ENABLE_FORCE_INCLUDE_USAGE")
	cfg.Decode = openai.DecodeOptions{
		AllowUnknownFields: envBool("DYN_IGNORE_OPENAI_FE_UNSUPPORTED_FIELDS"),
		DisableNvExt:       envBool("DYN_DISABLE_FRONTEND_NVEXT"),
	}
	addr = net.JoinHostPort(*f.host, strconv.Itoa(port))
	return cfg, addr, *f.tlsCert, *f.tlsKey, errors.Join(errs...)
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func logLevel(s string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return slog.LevelInfo
	}
	return l
}
