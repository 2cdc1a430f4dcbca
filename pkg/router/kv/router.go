package kv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// Routing modes a Router reports.
const (
	ModeEvents      = "events"      // the index follows the workers' KV events
	ModeApproximate = "approximate" // routing decisions stand in for KV events
)

// Config is the KV routing a frontend applies to every model it serves
// (its --router-* and --kv-* flags). The zero value follows KV events with
// the reference weights.
type Config struct {
	// OverlapScoreWeight weighs cached prefix blocks against load; nil
	// means 1.0.
	OverlapScoreWeight *float64
	// Temperature > 0 samples workers by softmax over costs; 0 picks the
	// cheapest.
	Temperature float64
	// NoEvents routes without KV events (approximate mode): the router
	// assumes a routed prompt is cached for TTL.
	NoEvents bool
	// TTL is the approximate mode's block lifetime (0: defaultApproxTTL).
	TTL time.Duration
	// ReplicaSync shares active-load deltas with the other frontends over
	// the event plane.
	ReplicaSync bool
	// NoTrackActiveBlocks stops counting active requests' blocks as load.
	NoTrackActiveBlocks bool
	// Busy are the thresholds above which a worker is skipped (all off by
	// default).
	Busy BusyThresholds
}

// ModelInfo is what a model's card says about its workers.
type ModelInfo struct {
	// Name is the served model name, for logs and the mode gauge.
	Name string
	// Endpoint is the workers' endpoint; its namespace and component scope
	// the event-plane subjects.
	Endpoint runtime.EndpointID
	// BlockSize is the KV block size in tokens; it must be > 0.
	BlockSize int
	// Capacity is each worker's KV cache and batch budget, and its number
	// of data-parallel ranks.
	Capacity WorkerCapacity
}

// eventPlane is the part of the runtime a Router uses
// (*runtime.DistributedRuntime).
type eventPlane interface {
	HasEventPlane() bool
	InstanceID() uint64
	Subscribe(ctx context.Context, subject string, handle func(data []byte)) error
	Publish(ctx context.Context, subject string, data []byte) error
}

var _ eventPlane = (*runtime.DistributedRuntime)(nil)

// RouterDeps are a Router's collaborators.
type RouterDeps struct {
	// Events is the runtime's event plane. Required.
	Events eventPlane
	// Querier asks workers' local indexes for dumps and missed events
	// (NewRuntimeQuerier). Required unless the model runs in approximate
	// mode.
	Querier Querier
	// Next sends a request to the chosen worker (*router.PushRouter).
	// Required.
	Next Pusher
	// Metrics are shared by the frontend's models; nil records nothing.
	Metrics *Metrics
	// LoadChanged, when set, is called after each load event a worker
	// published has been recorded (the admission stage looks again at
	// workers that may have room). It must not block.
	LoadChanged func()
	// Logger receives the log lines; nil discards.
	Logger *slog.Logger
}

// Router is one model's KV-aware routing: the router stage, the index of
// the workers' cached blocks kept in step with their KV events (or the
// approximate index), the workers' load, and the event-plane
// subscriptions that feed them.
//
// Lifecycle: NewRouter builds it and starts nothing; Run subscribes and, in
// approximate mode, expires old blocks, until its context ends. The owner
// tells it about workers joining (AddWorker loads a joining worker's
// cached blocks) and leaving (RemoveWorker). Generate and Decide may be
// called before Run. A Router is safe for concurrent use.
type Router struct {
	info     ModelInfo
	cfg      Config
	dpSize   int
	events   eventPlane
	router   *routeStage
	monitor  *LoadMonitor
	seqs     *Sequences
	sync     *eventSync     // nil in approximate mode
	approx   *approxIndexer // nil in events mode
	degraded bool           // KV events were wanted but there is no event plane
	met      *routerMetrics // may be nil
	changed  func()         // RouterDeps.LoadChanged; may be nil
	log      *slog.Logger
}

var _ backend.Generator = (*Router)(nil)

// NewRouter builds the KV routing of one model. It fails on invalid
// thresholds or scheduler settings.
func NewRouter(cfg Config, info ModelInfo, deps RouterDeps) (*Router, error) {
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	met := deps.Metrics
	if met == nil {
		met = &Metrics{}
	}
	m := &Router{info: info, cfg: cfg, dpSize: int(max(1, info.Capacity.DataParallelSize)), events: deps.Events, met: met.router, changed: deps.LoadChanged, log: log}
	sc := defaultSchedulerConfig(info.BlockSize)
	if cfg.OverlapScoreWeight != nil {
		sc.OverlapScoreWeight = *cfg.OverlapScoreWeight
	}
	sc.Temperature = cfg.Temperature
	var err error
	if m.monitor, err = NewLoadMonitor(cfg.Busy); err != nil {
		return nil, err
	}
	sched, err := newScheduler(sc, schedulerDeps{Busy: m.monitor, Logger: log})
	if err != nil {
		return nil, err
	}
	if m.seqs, err = m.newSequences(met.router); err != nil {
		return nil, err
	}
	match, mode := m.newIndex(deps.Querier, met)
	met.setMode(info.Name, mode)
	m.router = newRouteStage(routeConfig{BlockSize: info.BlockSize, DPSize: m.dpSize}, routeDeps{
		Next: deps.Next, Matcher: match, Approx: m.approx, scheduler: sched, sequences: m.seqs, Metrics: met.router, Logger: log,
	})
	log.Info("kv router: ready", "model", info.Name, "mode", mode, "block_size", info.BlockSize,
		"overlap_score_weight", sc.OverlapScoreWeight, "temperature", sc.Temperature)
	return m, nil
}

// newSequences builds the active-load tracker, publishing its deltas to
// the other frontends with ReplicaSync. Every change of a (worker, dp
// rank)'s tracked load (this router's requests, and the replicas' with
// ReplicaSync) feeds the load monitor, where the prefill-token busy
// thresholds read it, and the worker gauges.
func (m *Router) newSequences(met *routerMetrics) (*Sequences, error) {
	seqCfg := defaultSequencesConfig(m.info.BlockSize)
	seqCfg.TrackActiveBlocks = !m.cfg.NoTrackActiveBlocks
	seqCfg.RouterID = m.events.InstanceID()
	deps := sequencesDeps{OnLoad: func(l activeLoad) {
		m.monitor.ObserveActiveLoad(l)
		met.SetActiveLoad("decode", l)
	}}
	if m.cfg.ReplicaSync {
		subject := m.replicaSubject()
		deps.Publish = func(ev sequenceEvent) {
			b, err := kvblock.Marshal(ev)
			if err == nil {
				// Publishing is fire-and-forget: it does not wait on ctx.
				err = m.events.Publish(context.Background(), subject, b)
			}
			if err != nil && !errors.Is(err, runtime.ErrNoEventPlane) {
				m.log.Debug("kv router: replica event not published", "err", err)
			}
		}
	}
	return newSequences(seqCfg, deps)
}

// newIndex builds what finds cached prefixes: the event-fed indexer, or
// the approximate one when events are off or cannot be heard.
func (m *Router) newIndex(q Querier, met *Metrics) (matcher, string) {
	if !m.cfg.NoEvents && m.events.HasEventPlane() {
		idx := newIndexer(indexerOptions{Metrics: met.indexer})
		m.sync = newEventSync(idx, q, m.log)
		return idx, ModeEvents
	}
	if !m.cfg.NoEvents {
		m.degraded = true
		m.log.Warn("kv router: no KV event publishers can be heard: the event plane needs NATS (--request-plane nats); "+
			"falling back to approximate mode (routing decisions stand in for KV events)", "model", m.info.Name,
			"subject", kvblock.KVEventsSubject(m.info.Endpoint.Namespace, m.info.Endpoint.Component))
	}
	m.approx = newApproxIndexer(approxOptions{TTL: m.cfg.TTL, Metrics: met.indexer})
	return m.approx, ModeApproximate
}

func (m *Router) replicaSubject() string {
	return kvblock.ComponentSubject(m.info.Endpoint.Namespace, m.info.Endpoint.Component, activeSequencesTopic)
}

// Mode returns ModeEvents or ModeApproximate, and whether approximate
// mode is a fallback: KV events were wanted but the event plane is
// missing.
func (m *Router) Mode() (mode string, degraded bool) {
	if m.sync != nil {
		return ModeEvents, false
	}
	return ModeApproximate, m.degraded
}

// Generate routes req to the worker the router chooses (see
// routeStage.Generate).
func (m *Router) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	return m.router.Generate(ctx, req, emit)
}

// Decide answers where req would go, changing nothing (see
// routeStage.Decide).
func (m *Router) Decide(req *backend.Request) (*backend.Placement, error) {
	return m.router.Decide(req)
}

// Busy reports whether the worker is busy by the thresholds in force:
// the admission stage queues requests while every worker is.
func (m *Router) Busy(workerID uint64) bool { return m.monitor.Busy(workerID) }

// Monitor returns the model's load monitor: the workers' published load
// and the busy thresholds.
func (m *Router) Monitor() *LoadMonitor { return m.monitor }

// Thresholds returns the busy thresholds in force.
func (m *Router) Thresholds() BusyThresholds { return m.monitor.Thresholds() }

// UpdateThresholds changes the thresholds u sets, keeps the others, and
// returns the thresholds now in force.
func (m *Router) UpdateThresholds(u BusyThresholds) (BusyThresholds, error) {
	return m.monitor.UpdateThresholds(u)
}

// AddWorker tells the model a worker joined: its capacity counts at once,
// and in events mode its cached blocks (a dump of its local index, per dp
// rank) are loaded before AddWorker returns, so that the worker is routed
// with its cache known. A worker that does not answer within the query
// timeout is logged and routed on what its events will tell; ctx bounds
// the wait too.
func (m *Router) AddWorker(ctx context.Context, id uint64) {
	m.monitor.SetCapacity(id, m.info.Capacity)
	if m.sync == nil {
		return
	}
	for r := 0; r < m.dpSize; r++ {
		m.sync.Resync(ctx, Worker{ID: id, DPRank: uint32(r)})
	}
}

// RemoveWorker forgets a worker that left: its cached blocks, load and
// capacity.
func (m *Router) RemoveWorker(id uint64) {
	if m.sync != nil {
		m.sync.RemoveWorker(id)
	}
	m.monitor.RemoveWorker(id)
	m.router.RemoveWorker(id)
	m.met.DeleteWorker(id)
}

// Run subscribes to the workers' KV events and load metrics (and the
// replicas' load deltas with ReplicaSync) and, in approximate mode, runs
// the index's expiry, until ctx ends. It returns nil then, or the error of
// a subscription that failed.
func (m *Router) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the subscriptions
	if err := m.subscribe(ctx); err != nil {
		return fmt.Errorf("kv router: %s: %w", m.info.Name, err)
	}
	if m.approx != nil {
		return m.approx.Run(ctx)
	}
	<-ctx.Done()
	return nil
}

// subscribe opens the model's event-plane subscriptions for the life of
// ctx. Without an event plane there is nothing to hear: that is not an
// error (NewRouter chose the mode accordingly).
func (m *Router) subscribe(ctx context.Context) error {
	ep := m.info.Endpoint
	// Workers publish their per-pass load on the namespace's kv_metrics
	// subject: it feeds busy detection.
	err := m.events.Subscribe(ctx, kvblock.LoadMetricsSubject(ep.Namespace), func(b []byte) {
		var ev kvblock.LoadEvent
		if kvblock.Unmarshal(b, &ev) == nil {
			m.monitor.ObserveLoadEvent(ev)
			if m.changed != nil {
				m.changed()
			}
		}
	})
	if errors.Is(err, runtime.ErrNoEventPlane) {
		if m.cfg.ReplicaSync {
			m.log.Warn("kv router: --router-replica-sync needs the NATS event plane (--request-plane nats); replicas will not share load", "model", m.info.Name)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if m.cfg.ReplicaSync {
		if err := m.events.Subscribe(ctx, m.replicaSubject(), func(b []byte) {
			var ev sequenceEvent
			if kvblock.Unmarshal(b, &ev) == nil {
				_ = m.seqs.Apply(ev)
			}
		}); err != nil {
			return err
		}
	}
	if m.sync != nil {
		return m.events.Subscribe(ctx, kvblock.KVEventsSubject(ep.Namespace, ep.Component), func(b []byte) { m.sync.HandleMessage(ctx, b) })
	}
	return nil
}
