package pipeline

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"go.opentelemetry.io/otel/trace"

	"github.com/dynamo-go/dynamo/pkg/admission"
	"github.com/dynamo-go/dynamo/pkg/migration"
	"github.com/dynamo-go/dynamo/pkg/prefill"
	"github.com/dynamo-go/dynamo/pkg/router/affinity"
	"github.com/dynamo-go/dynamo/pkg/router/kv"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// Registry owns the served models: it follows the model cards workers
// publish in discovery (Run), builds each model's chain when its first
// worker appears, tells the chain about workers joining and leaving, and
// drops the model with its last worker. The HTTP layer asks it for a model
// by name (Lookup) and for the list (Models).
//
// Lifecycle: New builds it and starts nothing; Run follows discovery and
// owns every goroutine the models' chains need, until its context ends.
// A Registry is safe for concurrent use.
type Registry struct {
	cfg     Config
	rt      *runtime.DistributedRuntime
	log     *slog.Logger
	tp      trace.TracerProvider // nil: no spans
	clock   func() time.Time
	metrics ModelMetrics
	migMet  *migration.Metrics
	kvMet   *kv.Metrics       // nil unless RouterKV
	affMet  *affinity.Metrics // nil unless SessionAffinityTTL
	preMet  *prefill.Metrics
	admMet  *admission.Metrics

	files *fileFetcher
	// loraRegs are the adapters registered to load on demand.
	loraRegs *loraRegistrations
	// loraStates are the adapters active in the workers' engines.
	loraStates *loraStates
	loaded     chan *pendingModel // loaders hand loaded models to Run
	loaders    sync.WaitGroup

	mu          sync.RWMutex
	models      map[string]*Model        // canonical name -> model
	names       map[string]*Model        // every served name -> model
	byKey       map[string]*Model        // card key -> model
	pending     map[string]*pendingModel // display name -> model whose files load
	pendingKeys map[string]*pendingModel // card key -> pending model
	prefills    map[string]*prefillPool  // display name -> the model's prefill workers
	prefillKeys map[string]*prefillPool  // card key of a prefill worker -> its pool
	synced      bool                     // the first discovery snapshot was applied
}

// ModelMetrics publishes which models are served and their configuration
// (the frontend's model_ready and model_* gauges: *frontend.Metrics).
type ModelMetrics interface {
	SetModel(model string, c ModelConfig)
	RemoveModel(model string)
}

// ModelConfig is a model's configuration as the per-model gauges show it
// (spec §6.2): from the model card and the workers' runtime config.
type ModelConfig struct {
	ContextLength       int
	KVCacheBlockSize    int
	TotalKVBlocks       int
	MaxNumSeqs          int
	MaxNumBatchedTokens int
	MigrationLimit      int
}

// New returns a registry; Run starts it.
func New(cfg Config, deps Deps) (*Registry, error) {
	if deps.Runtime == nil {
		return nil, errors.New("pipeline: Deps.Runtime is required")
	}
	cfg = cfg.withDefaults()
	switch cfg.RouterMode {
	case RouterRoundRobin, RouterRandom, RouterKV:
	default:
		return nil, fmt.Errorf("pipeline: unknown router mode %q (want %s, %s or %s)", cfg.RouterMode, RouterRoundRobin, RouterRandom, RouterKV)
	}
	r := &Registry{cfg: cfg, rt: deps.Runtime, log: deps.Logger, tp: deps.TracerProvider, clock: deps.Clock, metrics: deps.Metrics,
		models: map[string]*Model{}, names: map[string]*Model{}, byKey: map[string]*Model{},
		pending: map[string]*pendingModel{}, pendingKeys: map[string]*pendingModel{},
		prefills: map[string]*prefillPool{}, prefillKeys: map[string]*prefillPool{}, loaded: make(chan *pendingModel)}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.clock == nil {
		r.clock = time.Now
	}
	if r.metrics == nil {
		r.metrics = noMetrics{}
	}
	r.files = &fileFetcher{rt: r.rt, cache: newFileCache(cfg.FileCacheIdleBytes), log: r.log}
	r.loraRegs = newLoraRegistrations(r.rt.Store(), r.log)
	r.loraStates = &loraStates{}
	reg := deps.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	var err error
	if r.migMet, err = migration.NewMetrics(reg, cfg.MetricsPrefix); err != nil {
		return nil, fmt.Errorf("pipeline: metrics: %w", err)
	}
	if r.preMet, err = prefill.NewMetrics(reg, cfg.MetricsPrefix); err != nil {
		return nil, fmt.Errorf("pipeline: metrics: %w", err)
	}
	if r.admMet, err = admission.NewMetrics(reg, cfg.MetricsPrefix); err != nil {
		return nil, fmt.Errorf("pipeline: metrics: %w", err)
	}
	if cfg.RouterMode == RouterKV {
		if r.kvMet, err = kv.NewMetrics(reg); err != nil {
			return nil, fmt.Errorf("pipeline: metrics: %w", err)
		}
	}
	if cfg.SessionAffinityTTL > 0 {
		if r.affMet, err = affinity.NewMetrics(reg, cfg.MetricsPrefix); err != nil {
			return nil, fmt.Errorf("pipeline: metrics: %w", err)
		}
	}
	return r, nil
}

// Lookup returns the model served under name (its canonical name or an
// alias), or nil.
func (r *Registry) Lookup(name string) *Model {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.names[name]
}

// Models returns the served models, sorted by name. A model is served from
// its first worker's card until its last worker leaves; Model.Ready says
// whether a worker can take requests now.
func (r *Registry) Models() []*Model {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Model, 0, len(r.models))
	for _, m := range r.models {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// Synced reports whether the first discovery snapshot has been applied.
func (r *Registry) Synced() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.synced
}

// Discovery reports the link to discovery: during an outage the registry
// keeps serving the models and instances it knows.
func (r *Registry) Discovery() runtime.DiscoveryStatus { return r.rt.DiscoveryStatus() }

// Instances returns every discovered worker instance of every model,
// sorted by id.
func (r *Registry) Instances() []runtime.Instance {
	var out []runtime.Instance
	seen := map[uint64]bool{}
	for _, m := range r.Models() {
		for _, in := range m.Instances() {
			if !seen[in.ID] {
				seen[in.ID] = true
				out = append(out, in)
			}
		}
	}
	slices.SortFunc(out, func(a, b runtime.Instance) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// noMetrics records nothing.
type noMetrics struct{}

func (noMetrics) SetModel(string, ModelConfig) {}
func (noMetrics) RemoveModel(string)           {}
