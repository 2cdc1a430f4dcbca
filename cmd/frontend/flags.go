package main

import (
	"errors"
	"strconv"
	"strings"
	"unicode"

	"github.com/dynamo-go/dynamo/cmd/internal/envflag"
	"github.com/dynamo-go/dynamo/pkg/frontend"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
	"github.com/dynamo-go/dynamo/pkg/responsestore"
)

// flags are the frontend's own flags, each bound to its environment
// variables (a flag on the command line wins).
type flags struct {
	set *envflag.Set

	host, tlsCert, tlsKey                         *string
	port                                          *int
	namespace, routerMode, metricsPrefix          *string
	blockSize, migrationLimit, migrationMaxSeq    *int
	kvWeight, kvWeightAlias, temperature, ttlSecs *float64
	kvEvents, noKVEvents, replicaSync             *bool
	trackBlocks, noTrackBlocks                    *bool
	busyDecode, busyPrefillFrac                   *float64
	busyPrefill                                   *int64
	enforceDisagg, condDisagg                     *bool
	condEffISL                                    *int
	condEffISLRatio                               *float64
	queueMax, queueWorkerLimit                    *int
	tenantMax                                     *int
	tenantHeader                                  *string
	queueTimeout, queueThreshold                  *float64
	sessionTTL                                    *float64
	queuePolicy                                   *string
	accessLog                                     *bool
	conversationCacheMiB                          *int
	responsesStore, responsesDir, responsesTTL    *string
	responsesBucket                               *string
	responsesReplicas                             *int

	apiKeys                                 secretList
	apiKeyFile, authExempt, corsAllowedOrig *string
}

func register(s *envflag.Set) *flags {
	f := &flags{
		set:     s,
		host:    s.String("http-host", "0.0.0.0", "address to listen on", "DYN_HTTP_HOST"),
		port:    s.Int("http-port", 8000, "port to listen on; 0 picks a free port (the log says which)", "DYN_HTTP_PORT"),
		tlsCert: s.String("tls-cert-path", "", "TLS certificate (PEM); serve HTTPS with --tls-key-path", "DYN_TLS_CERT_PATH"),
		tlsKey:  s.String("tls-key-path", "", "TLS private key (PEM)", "DYN_TLS_KEY_PATH"),

		namespace:       s.String("namespace", "", "serve only the models of this namespace; empty serves all", "DYN_NAMESPACE"),
		routerMode:      s.String("router-mode", pipeline.RouterRoundRobin, "how to pick a worker: round-robin, random, least-loaded (fewest requests in flight), or kv (by cached prefix and load)", "DYN_ROUTER_MODE"),
		sessionTTL:      s.Float64("router-session-affinity-ttl", 0, "keep a session (X-Dynamo-Session-ID, nvext.session_control, a Responses or Messages conversation) on the worker that served its latest turn for this many seconds after it; 0 is off", "DYN_ROUTER_SESSION_AFFINITY_TTL"),
		blockSize:       s.Int("kv-cache-block-size", 0, "KV cache block size in tokens; 0 takes the model card's", "DYN_KV_CACHE_BLOCK_SIZE"),
		migrationLimit:  s.Int("migration-limit", 0, "times a broken stream may move to another worker; overrides the model cards' limit when given", "DYN_MIGRATION_LIMIT"),
		migrationMaxSeq: s.Int("migration-max-seq-len", 0, "longest sequence (prompt + generated) a migration may re-issue; 0 is no bound", "DYN_MIGRATION_MAX_SEQ_LEN"),
		metricsPrefix:   s.String("metrics-prefix", "dynamo_frontend", "prefix of the metric names", "DYN_METRICS_PREFIX"),

		conversationCacheMiB: s.Int("conversation-cache-mib", 64, "MiB per model of recent chat prompts' token ids, so that a conversation's next turn tokenizes only what it adds (exact: the ids of a whole tokenization); 0 is off", "DYN_CONVERSATION_CACHE_MIB"),

		kvWeight:        s.Float64("kv-overlap-score-weight", 1.0, "router mode kv: weight of cached prefix blocks against load", "DYN_KV_OVERLAP_SCORE_WEIGHT", "DYN_ROUTER_KV_OVERLAP_SCORE_WEIGHT", "DYN_OVERLAP_SCORE_WEIGHT"),
		kvWeightAlias:   s.Float64("router-kv-overlap-score-weight", 1.0, "same as --kv-overlap-score-weight"),
		temperature:     s.Float64("router-temperature", 0, "router mode kv: 0 picks the cheapest worker, > 0 samples by softmax over costs", "DYN_ROUTER_TEMPERATURE"),
		kvEvents:        s.Bool("kv-events", true, "router mode kv: follow the workers' KV events (needs NATS)", "DYN_ROUTER_USE_KV_EVENTS", "DYN_KV_EVENTS"),
		noKVEvents:      s.Bool("no-kv-events", false, "router mode kv: route without KV events (approximate mode: routing decisions stand in for them)"),
		ttlSecs:         s.Float64("router-ttl-secs", 120, "approximate mode: seconds a routed prompt counts as cached", "DYN_ROUTER_TTL_SECS"),
		replicaSync:     s.Bool("router-replica-sync", false, "router mode kv: share active load with the other frontends over NATS", "DYN_ROUTER_REPLICA_SYNC"),
		trackBlocks:     s.Bool("track-active-blocks", true, "router mode kv: count the blocks of active requests as load", "DYN_ROUTER_TRACK_ACTIVE_BLOCKS"),
		noTrackBlocks:   s.Bool("no-track-active-blocks", false, "same as --track-active-blocks=false"),
		busyDecode:      s.Float64("active-decode-blocks-threshold", -1, "router mode kv: a worker whose active KV blocks exceed this fraction of its cache is busy and skipped; -1 is off", "DYN_ACTIVE_DECODE_BLOCKS_THRESHOLD"),
		busyPrefill:     s.Int64("active-prefill-tokens-threshold", -1, "router mode kv: a worker with more queued prefill tokens is busy; -1 is off", "DYN_ACTIVE_PREFILL_TOKENS_THRESHOLD"),
		busyPrefillFrac: s.Float64("active-prefill-tokens-threshold-frac", -1, "router mode kv: same, as a fraction of the worker's max batched tokens; -1 is off", "DYN_ACTIVE_PREFILL_TOKENS_THRESHOLD_FRAC"),

		enforceDisagg:   s.Bool("enforce-disagg", false, "fail the requests that cannot be prefilled on a prefill worker (503 while the model has none available; the prefill's error when it failed) instead of prefilling them on the decode worker", "DYN_ENFORCE_DISAGG"),
		condDisagg:      s.Bool("router-conditional-disagg", false, "disaggregated models: prefill short or mostly cached prompts on the decode worker (both thresholds below must hold)", "DYN_ROUTER_CONDITIONAL_DISAGG"),
		condEffISL:      s.Int("router-conditional-disagg-eff-isl-threshold", 2048, "conditional disaggregation: prefill locally only below this many uncached prompt tokens (the decode worker's cached prefix, known with router mode kv, taken off)", "DYN_ROUTER_CONDITIONAL_DISAGG_EFF_ISL_THRESHOLD"),
		condEffISLRatio: s.Float64("router-conditional-disagg-eff-isl-ratio-threshold", 0.7, "conditional disaggregation: ... and only below this fraction of uncached prompt tokens", "DYN_ROUTER_CONDITIONAL_DISAGG_EFF_ISL_RATIO_THRESHOLD"),

		tenantMax:        s.Int("tenant-max-inflight", 0, "requests in flight (queued ones included) per tenant: the API key, else the --tenant-header value; one more gets 429 with Retry-After; requests without a tenant are not limited; 0 is off", "DYN_TENANT_MAX_INFLIGHT"),
		tenantHeader:     s.String("tenant-header", "x-dynamo-tenant", "request header naming the tenant when no API keys are configured", "DYN_TENANT_HEADER"),
		queueMax:         s.Int("router-queue-max", 1024, "requests that may wait per model while every worker is saturated; one more is refused at once (503 with Retry-After); 0 refuses instead of queueing", "DYN_ROUTER_QUEUE_MAX"),
		queueTimeout:     s.Float64("router-queue-timeout", 30, "seconds a request may wait in the queue before a 503 with Retry-After", "DYN_ROUTER_QUEUE_TIMEOUT"),
		queuePolicy:      s.String("router-queue-policy", "fcfs", "queue order: fcfs (earliest first), lcfs (latest first, for experiments) or wspt (highest (1 + priority jump) / prompt tokens first: short prompts first); nvext.agent_hints.latency_sensitivity (or priority) is the priority jump, in seconds", "DYN_ROUTER_QUEUE_POLICY"),
		queueWorkerLimit: s.Int("router-queue-worker-limit", 0, "requests a worker may have in flight from this frontend when its card has no max_num_seqs; 0 is unlimited", "DYN_ROUTER_QUEUE_WORKER_LIMIT"),
		queueThreshold:   s.Float64("router-queue-threshold", 0, "a worker with more prompt tokens in flight from this frontend, not yet prefilled, than this many times its max_num_batched_tokens (10,000,000 when its card does not say) is saturated; unset or 0 turns this rule off (the reference's E2 default is 4)", "DYN_ROUTER_QUEUE_THRESHOLD"),

		apiKeyFile:      s.String("api-key-file", "", "file of API keys, one a line (blank lines and # comments skipped), for keys mounted as secrets; adds to --api-key", "DYN_API_KEY_FILE"),
		authExempt:      s.String("api-key-exempt-paths", strings.Join(frontend.DefaultAuthExemptPaths, ","), "with API keys: paths served without a key, comma separated (a trailing * makes a prefix; none for no path)", "DYN_API_KEY_EXEMPT_PATHS"),
		corsAllowedOrig: s.String("cors-allowed-origins", "", "origins (scheme://host[:port], or *) whose web pages may call the API, comma separated; empty sends no CORS headers", "DYN_CORS_ALLOWED_ORIGINS"),

		responsesStore:    s.String("responses-store", responsesStoreFile, "where stored Responses API responses are kept (store, previous_response_id, GET/DELETE /v1/responses/{id}, background): file (an embedded database under --responses-data-dir, for one frontend), nats (a JetStream key-value bucket on NATS_SERVER, shared by several frontends) or none (answered, not kept)", "DYN_RESPONSES_STORE"),
		responsesDir:      s.String("responses-data-dir", "", "directory of --responses-store file's database (responses.db); default $XDG_STATE_HOME/dynamo/responses, else ~/.local/state/dynamo/responses", "DYN_RESPONSES_DATA_DIR"),
		responsesTTL:      s.String("responses-ttl", defaultResponsesTTL, "how long a stored response is kept after its last write (30d, 720h, 90m); 30 days, as OpenAI keeps them", "DYN_RESPONSES_TTL"),
		responsesBucket:   s.String("responses-nats-bucket", responsestore.DefaultBucket, "--responses-store nats: the key-value bucket (every frontend sharing conversations names the same)", "DYN_RESPONSES_NATS_BUCKET"),
		responsesReplicas: s.Int("responses-nats-replicas", 1, "--responses-store nats: the bucket's replicas (3 on a three-node JetStream cluster)", "DYN_RESPONSES_NATS_REPLICAS"),

		accessLog: s.Bool("access-log", false, "log one info line per HTTP request when it ends, as proxies do: method, path, status, duration, bytes, client address; for /v1 requests also the request and trace ids, model and token counts", "DYN_HTTP_ACCESS_LOG"),
	}
	// The keys have their own flag type: an envflag default would print
	// DYN_API_KEYS in --help.
	s.FlagSet().Var(&f.apiKeys, "api-key", "API `key` clients must send as 'Authorization: Bearer <key>'; repeat the flag or separate keys with commas; none leaves the API open [env "+envAPIKeys+"]")
	return f
}

// envAPIKeys is --api-key's variable; settings reads it.
const envAPIKeys = "DYN_API_KEYS"

// secretList is a repeatable flag of comma-separated secrets. Its String
// never shows them.
type secretList struct {
	values []string
	given  bool // on the command line
}

func (l *secretList) String() string {
	if l == nil || len(l.values) == 0 {
		return ""
	}
	return strconv.Itoa(len(l.values)) + " hidden"
}

// Set adds the keys of v. An empty v is an error (it says no value, so
// it shows no secret): --api-key "$KEY" with KEY unset must not leave the
// API open.
func (l *secretList) Set(v string) error {
	keys := splitList(v)
	if len(keys) == 0 {
		return errors.New("no key in the value")
	}
	l.given = true
	l.values = append(l.values, keys...)
	return nil
}

// splitList splits a comma (or space) separated list, dropping empty
// items.
func splitList(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
}

const envHelp = `HTTP environment:
  DYN_HTTP_BODY_LIMIT_MB                   largest request body in MiB (45)
  DYN_HTTP_GRACEFUL_SHUTDOWN_TIMEOUT_SECS  /health answers 503 this long before draining (5)
  DYN_HTTP_DRAIN_TIMEOUT_SECS              in-flight requests may finish this long (30)
  DYN_HTTP_BACKEND_STREAM_TIMEOUT_SECS     longest wait for a worker's next item (none)
  DYN_HTTP_OVERLOAD_STATUS_CODE            status for overload rejections (503)
  DYN_HTTP_DETACH_STREAMS_AT               with this many streams in flight, a new one takes its HTTP/1.1
                                           connection over from the server: less memory (64; -1 never)
  DYN_ENABLE_FORCE_INCLUDE_USAGE           always send the usage chunk (false)
  DYN_IGNORE_OPENAI_FE_UNSUPPORTED_FIELDS  ignore unknown request fields instead of refusing them (false)
  DYN_DISABLE_FRONTEND_NVEXT               refuse the nvext extension (false)
  DYN_METRICS_<NAME>_{MIN,MAX,COUNT}       histogram buckets (see docs)
  DYN_PPROF_ADDR                           serve Go profiles (/debug/pprof/) on this address (off)
  DYN_GC_MIN_HEAP_MIB                      below this heap size (MiB) the Go collector does not run (32; 0: GOGC alone)
`
