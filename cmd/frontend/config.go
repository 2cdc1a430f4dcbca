package main

import (
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dynamo-go/dynamo/cmd/internal/gcfloor"
	"github.com/dynamo-go/dynamo/pkg/admission"
	"github.com/dynamo-go/dynamo/pkg/frontend"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
	"github.com/dynamo-go/dynamo/pkg/prefill"
	"github.com/dynamo-go/dynamo/pkg/router/kv"
)

// settings is everything the frontend process runs with.
type settings struct {
	addr, tlsCert, tlsKey string
	http                  frontend.Config
	metrics               frontend.MetricsConfig
	models                pipeline.Config
	responses             responsesSettings
	gcFloorMiB            int // gcfloor.Run's floor
}

// settings validates the parsed flags and reads the HTTP environment. It
// reports every problem at once.
func (f *flags) settings(env func(string) string) (settings, error) {
	var errs []error
	check := func(bad bool, format string, args ...any) {
		if bad {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	s := settings{tlsCert: *f.tlsCert, tlsKey: *f.tlsKey}
	check(*f.port < 0 || *f.port > 65535, "--http-port %d: out of range 0-65535", *f.port)
	check((*f.tlsCert == "") != (*f.tlsKey == ""), "--tls-cert-path and --tls-key-path must be given together")
	for _, p := range []string{*f.tlsCert, *f.tlsKey} {
		if _, err := os.Stat(p); p != "" && err != nil {
			errs = append(errs, fmt.Errorf("TLS file: %w", err))
		}
	}
	s.addr = net.JoinHostPort(*f.host, strconv.Itoa(*f.port))

	var err error
	if s.models, err = f.modelsConfig(); err != nil {
		errs = append(errs, err)
	}
	if s.http, err = f.httpConfig(); err != nil {
		errs = append(errs, err)
	}
	if err := f.accessConfig(&s.http, env); err != nil {
		errs = append(errs, err)
	}
	if s.gcFloorMiB, err = gcfloor.MiB(env(gcfloor.Env)); err != nil {
		errs = append(errs, err)
	}
	if s.responses, err = f.responsesConfig(env); err != nil {
		errs = append(errs, err)
	}
	s.metrics.Prefix = frontend.MetricsPrefix(*f.metricsPrefix)
	s.models.MetricsPrefix = s.metrics.Prefix
	if s.metrics.Buckets, err = frontend.BucketsFromEnv(env); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, f.set.Err())
	return s, errors.Join(errs...)
}

// modelsConfig is how the models are routed: router mode, KV routing,
// migration, disaggregation.
func (f *flags) modelsConfig() (pipeline.Config, error) {
	var errs []error
	c := pipeline.Config{Namespace: *f.namespace, RouterMode: *f.routerMode, KVCacheBlockSize: *f.blockSize, MigrationMaxSeqLen: *f.migrationMaxSeq}
	switch c.RouterMode {
	case pipeline.RouterRoundRobin, pipeline.RouterRandom, pipeline.RouterLeastLoaded, pipeline.RouterKV:
	default:
		errs = append(errs, fmt.Errorf("--router-mode %q: want round-robin, random, least-loaded or kv", c.RouterMode))
	}
	switch ttl := *f.sessionTTL; {
	case !(ttl >= 0) || math.IsInf(ttl, 1):
		errs = append(errs, fmt.Errorf("--router-session-affinity-ttl %v: want a number of seconds (0: off)", ttl))
	default:
		c.SessionAffinityTTL = time.Duration(ttl * float64(time.Second))
	}
	if c.KVCacheBlockSize < 0 {
		errs = append(errs, fmt.Errorf("--kv-cache-block-size %d: must not be negative", c.KVCacheBlockSize))
	}
	if f.set.Given("migration-limit") {
		n := *f.migrationLimit
		if n < 0 || n > 1<<32-1 {
			errs = append(errs, fmt.Errorf("--migration-limit %d: out of range 0-4294967295", n))
		}
		c.MigrationLimit = &n
	}
	if n := *f.conversationCacheMiB; n < 0 {
		errs = append(errs, fmt.Errorf("--conversation-cache-mib %d: must not be negative", n))
	} else {
		c.ConversationCacheBytes = int64(n) << 20
	}
	if c.MigrationMaxSeqLen < 0 {
		errs = append(errs, fmt.Errorf("--migration-max-seq-len %d: must not be negative", c.MigrationMaxSeqLen))
	}
	c.EnforceDisagg = *f.enforceDisagg
	c.ConditionalDisagg = prefill.Conditional{Enabled: *f.condDisagg, EffISLThreshold: *f.condEffISL, EffISLRatioThreshold: *f.condEffISLRatio}
	if *f.condEffISL <= 0 {
		errs = append(errs, fmt.Errorf("--router-conditional-disagg-eff-isl-threshold %d: must be positive", *f.condEffISL))
	}
	if r := *f.condEffISLRatio; !(r > 0 && r <= 1) {
		errs = append(errs, fmt.Errorf("--router-conditional-disagg-eff-isl-ratio-threshold %v: want a fraction in (0, 1]", r))
	}
	c.Queue = &pipeline.QueueConfig{Max: *f.queueMax, Timeout: time.Duration(*f.queueTimeout * float64(time.Second)), Policy: *f.queuePolicy, WorkerLimit: *f.queueWorkerLimit}
	if c.Queue.Max < 0 {
		errs = append(errs, fmt.Errorf("--router-queue-max %d: must not be negative", c.Queue.Max))
	}
	if !(*f.queueTimeout > 0) || c.Queue.Timeout < time.Millisecond {
		errs = append(errs, fmt.Errorf("--router-queue-timeout %v: want a positive number of seconds (at least 0.001)", *f.queueTimeout))
	}
	if !slices.Contains(admission.Policies, c.Queue.Policy) {
		errs = append(errs, fmt.Errorf("--router-queue-policy %q: want one of %s", c.Queue.Policy, strings.Join(admission.Policies, ", ")))
	}
	switch v := *f.queueThreshold; {
	case !(v >= 0) || math.IsInf(v, 1):
		errs = append(errs, fmt.Errorf("--router-queue-threshold %v: want a multiple of max_num_batched_tokens (> 0), or 0 for off", v))
	case v > 0:
		c.Queue.Threshold = &v
	}
	if c.Queue.WorkerLimit < 0 {
		errs = append(errs, fmt.Errorf("--router-queue-worker-limit %d: must not be negative", c.Queue.WorkerLimit))
	}
	var err error
	if c.KV, err = f.kvConfig(); err != nil {
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
}

// kvConfig is the KV routing of --router-mode kv.
func (f *flags) kvConfig() (kv.Config, error) {
	var errs []error
	c := kv.Config{
		Temperature:         *f.temperature,
		NoEvents:            !*f.kvEvents || *f.noKVEvents,
		TTL:                 time.Duration(*f.ttlSecs * float64(time.Second)),
		ReplicaSync:         *f.replicaSync,
		NoTrackActiveBlocks: !*f.trackBlocks || *f.noTrackBlocks,
	}
	switch {
	case f.set.Given("router-kv-overlap-score-weight"):
		c.OverlapScoreWeight = f.kvWeightAlias
	case f.set.Given("kv-overlap-score-weight"):
		c.OverlapScoreWeight = f.kvWeight
	}
	if w := c.OverlapScoreWeight; w != nil && *w < 0 {
		errs = append(errs, fmt.Errorf("--kv-overlap-score-weight %v: must not be negative", *w))
	}
	if c.Temperature < 0 {
		errs = append(errs, fmt.Errorf("--router-temperature %v: must not be negative", c.Temperature))
	}
	if *f.ttlSecs <= 0 {
		errs = append(errs, fmt.Errorf("--router-ttl-secs %v: must be positive", *f.ttlSecs))
	}
	if v := *f.busyDecode; v >= 0 {
		c.Busy.ActiveDecodeBlocks = &v
	}
	if v := *f.busyPrefillFrac; v >= 0 {
		c.Busy.ActivePrefillTokensFrac = &v
	}
	if v := *f.busyPrefill; v >= 0 {
		n := uint64(v)
		c.Busy.ActivePrefillTokens = &n
	}
	if err := c.Busy.Validate(); err != nil {
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
}

// httpConfig reads the HTTP layer's environment.
func (f *flags) httpConfig() (frontend.Config, error) {
	var errs []error
	envInt := func(name string, def int) int {
		n := f.set.EnvInt(name, def)
		if n < 0 {
			errs = append(errs, fmt.Errorf("%s=%d: want a non-negative integer", name, n))
		}
		return n
	}
	seconds := func(name string, def int) time.Duration { return time.Duration(envInt(name, def)) * time.Second }
	c := frontend.Config{
		BodyLimit:         int64(envInt("DYN_HTTP_BODY_LIMIT_MB", 45)) << 20,
		ShutdownGrace:     seconds("DYN_HTTP_GRACEFUL_SHUTDOWN_TIMEOUT_SECS", 5),
		DrainTimeout:      seconds("DYN_HTTP_DRAIN_TIMEOUT_SECS", 30),
		StreamTimeout:     seconds("DYN_HTTP_BACKEND_STREAM_TIMEOUT_SECS", 0),
		OverloadStatus:    envInt("DYN_HTTP_OVERLOAD_STATUS_CODE", 503),
		ForceIncludeUsage: f.set.EnvBool("DYN_ENABLE_FORCE_INCLUDE_USAGE", false),
		DetachStreamsAt:   f.set.EnvInt("DYN_HTTP_DETACH_STREAMS_AT", 64),
		AccessLog:         *f.accessLog,
		Decode: openai.DecodeOptions{
			AllowUnknownFields: f.set.EnvBool("DYN_IGNORE_OPENAI_FE_UNSUPPORTED_FIELDS", false),
			DisableNvExt:       f.set.EnvBool("DYN_DISABLE_FRONTEND_NVEXT", false),
		},
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = -1 // 0 means none; the Config's zero value is the default
	}
	if c.BodyLimit == 0 {
		errs = append(errs, errors.New("DYN_HTTP_BODY_LIMIT_MB must be at least 1"))
	}
	c.TenantMaxInflight, c.TenantHeader = *f.tenantMax, *f.tenantHeader
	if c.TenantMaxInflight < 0 {
		errs = append(errs, fmt.Errorf("--tenant-max-inflight %d: must not be negative", c.TenantMaxInflight))
	}
	if c.TenantHeader == "" {
		errs = append(errs, errors.New("--tenant-header must name a header"))
	}
	if c.OverloadStatus < 400 || c.OverloadStatus > 599 {
		errs = append(errs, fmt.Errorf("DYN_HTTP_OVERLOAD_STATUS_CODE %d: want a 4xx or 5xx status", c.OverloadStatus))
	}
	return c, errors.Join(errs...)
}

// accessConfig reads who may call the API into c: the API keys (flags,
// DYN_API_KEYS, the key file), the paths open without one, and the CORS
// origins. No message names a key.
func (f *flags) accessConfig(c *frontend.Config, env func(string) string) error {
	var errs []error
	c.APIKeys = f.apiKeys.values
	if v := env(envAPIKeys); !f.apiKeys.given && v != "" {
		if c.APIKeys = splitList(v); len(c.APIKeys) == 0 {
			errs = append(errs, errors.New(envAPIKeys+": no key in the value"))
		}
	}
	if p := *f.apiKeyFile; p != "" {
		keys, err := readKeyFile(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("--api-key-file: %w", err))
		}
		c.APIKeys = append(c.APIKeys, keys...)
	}
	c.AuthExemptPaths = []string{}
	if v := strings.TrimSpace(*f.authExempt); v != "none" {
		c.AuthExemptPaths = append(c.AuthExemptPaths, splitList(v)...)
	}
	c.CORSAllowedOrigins = splitList(*f.corsAllowedOrig)
	errs = append(errs, c.Validate())
	return errors.Join(errs...)
}

// readKeyFile reads the keys of a key file: one a line, surrounding
// spaces trimmed, blank lines and lines starting with # skipped. A file
// without keys is an error: it would leave the API open by mistake.
func readKeyFile(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var keys []string
	for line := range strings.Lines(string(b)) {
		if k := strings.TrimSpace(line); k != "" && !strings.HasPrefix(k, "#") {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s: no keys in the file (want one key a line)", path)
	}
	return keys, nil
}
