package pipeline

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"go.opentelemetry.io/otel/trace"

	"github.com/dynamo-go/dynamo/pkg/prefill"
	"github.com/dynamo-go/dynamo/pkg/router/kv"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// Router modes: how a model's requests pick a worker.
const (
	RouterRoundRobin = "round-robin" // each worker in turn
	RouterRandom     = "random"      // a worker at random
	RouterKV         = "kv"          // by cached prefix and load (package router/kv)
	// RouterLeastLoaded: the worker with the fewest requests in flight,
	// then the fewest prompt tokens in prefill.
	RouterLeastLoaded = "least-loaded"
)

// Config configures the registry: how it builds every model's chain. The
// zero value of each field means its default; cmd/frontend fills it from
// flags and environment.
type Config struct {
	// Namespace restricts discovery to one namespace; "" watches all.
	Namespace string
	// RouterMode picks workers: RouterRoundRobin (default), RouterRandom,
	// RouterLeastLoaded or RouterKV.
	RouterMode string
	// SessionAffinityTTL, when positive, keeps each session (a request's
	// X-Dynamo-Session-ID, nvext.session_control, or a conversation the
	// frontend recognises) on the worker that served its latest turn for
	// this long after it (package router/affinity); 0 is off.
	SessionAffinityTTL time.Duration
	// KV configures RouterKV.
	KV kv.Config
	// MigrationLimit overrides the model cards' migration_limit when set.
	MigrationLimit *int
	// MigrationMaxSeqLen bounds the sequences migration may re-issue; 0 is
	// no bound.
	MigrationMaxSeqLen int
	// KVCacheBlockSize overrides the cards' block size when non-zero.
	KVCacheBlockSize int
	// MetricsPrefix starts the names of the model and migration metrics
	// ("" means dynamo_frontend). It must be a valid Prometheus name
	// prefix: cmd/frontend passes the frontend's (frontend.MetricsPrefix).
	MetricsPrefix string
	// EnforceDisagg fails the requests of a model that cannot be
	// prefilled on a prefill worker (none available, or the prefill
	// failed) instead of prefilling them on the decode worker
	// (--enforce-disagg).
	EnforceDisagg bool
	// ConditionalDisagg keeps short or mostly cached prompts on the decode
	// worker (--router-conditional-disagg and its thresholds).
	ConditionalDisagg prefill.Conditional
	// Queue, when set, puts an admission queue in front of every model's
	// routing (package admission); nil sends every request straight on.
	Queue *QueueConfig
	// ConversationCacheBytes bounds each model's cache of recent chat
	// prompts' token ids (preprocessor.Options.ConversationCacheBytes);
	// 0 keeps none.
	ConversationCacheBytes int64
	// FileCacheIdleBytes bounds the model files kept after their last model
	// left (default 256 MiB); files of served models are always kept.
	FileCacheIdleBytes int64
}

// Deps are the registry's collaborators.
type Deps struct {
	// Runtime is the process's distributed runtime: discovery, the request
	// plane and the event plane. Required.
	Runtime *runtime.DistributedRuntime
	// Logger receives the log lines; nil discards.
	Logger *slog.Logger
	// Registry receives the model, migration, prefill and KV routing metrics; nil
	// makes a private one.
	Registry prometheus.Registerer
	// Metrics publishes the served models (model_ready and the model_*
	// gauges); nil publishes nothing.
	Metrics ModelMetrics
	// Clock stamps the responses' "created" field; nil is time.Now.
	Clock func() time.Time
	// TracerProvider makes the spans of the models' stages (preprocessing,
	// migration attempts, routing); nil makes none.
	TracerProvider trace.TracerProvider
}

func (c Config) withDefaults() Config {
	if c.RouterMode == "" {
		c.RouterMode = RouterRoundRobin
	}
	if c.MetricsPrefix == "" {
		c.MetricsPrefix = "dynamo_frontend"
	}
	if c.FileCacheIdleBytes == 0 {
		c.FileCacheIdleBytes = 256 << 20
	}
	return c
}
