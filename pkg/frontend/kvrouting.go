package frontend

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/router"
	"github.com/dynamo-go/dynamo/pkg/router/kv"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// RouterKV routes by KV-cache overlap (--router-mode kv).
const RouterKV = "kv"

// KVConfig configures KV-aware routing.
type KVConfig struct {
	// OverlapScoreWeight weighs cached prefix blocks against load; nil
	// means 1.0.
	OverlapScoreWeight *float64
	// Temperature > 0 samples workers by softmax over costs; 0 picks the
	// cheapest.
	Temperature float64
	// NoEvents routes without KV events (approximate mode): the router
	// assumes a routed prompt is cached for TTL.
	NoEvents bool
	// TTL is the approximate mode's block lifetime (120 s).
	TTL time.Duration
	// ReplicaSync shares active-load deltas with the other frontends over
	// the event plane.
	ReplicaSync bool
	// NoTrackActiveBlocks stops counting active requests' blocks as load.
	NoTrackActiveBlocks bool
	// Busy are the thresholds above which a worker is skipped (all off by
	// default).
	Busy kv.BusyThresholds
}

// kvShared are the KV routing metrics, one set per service.
type kvShared struct {
	indexer *kv.IndexerMetrics
	router  *kv.RouterMetrics
	mode    *prometheus.GaugeVec // kv_router_mode{model,mode}: events | approximate
}

func newKVShared(reg prometheus.Registerer) (*kvShared, error) {
	im, err := kv.NewIndexerMetrics(reg, "dynamo_kvrouter")
	if err != nil {
		return nil, err
	}
	rm, err := kv.NewRouterMetrics(reg, "dynamo")
	if err != nil {
		return nil, err
	}
	mode := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dynamo_frontend_kv_router_mode",
		Help: "1 for the KV routing mode a model uses: events (KV events from the workers) or approximate (no events: routing decisions stand in for them).",
	}, []string{"model", "mode"})
	if err := reg.Register(mode); err != nil {
		return nil, err
	}
	return &kvShared{indexer: im, router: rm, mode: mode}, nil
}

// kvModel is one model's KV routing: its indexer kept in step with the
// workers' events (or the approximate indexer), and the router stage.
type kvModel struct {
	router   *kv.Router
	monitor  *kv.LoadMonitor
	capacity kv.WorkerCapacity
	sync     *kv.EventSync // nil in approximate mode
	approx   *kv.ApproxIndexer
	dpSize   int
	mode     string // "events" or "approximate"
	cancel   context.CancelFunc
	done     sync.WaitGroup
	degraded atomic.Bool // kv events were wanted but the event plane is missing
}

// newKVModel builds the KV router for a model whose workers serve ep.
func (s *Service) newKVModel(card *modelcard.Card, ep runtime.EndpointID, next *router.Engine) (*kvModel, error) {
	bs := int(card.KVCacheBlockSize)
	if bs <= 0 {
		bs = modelcard.DefaultBlockSize
	}
	kc := s.cfg.KV
	sc := kv.DefaultSchedulerConfig(bs)
	if kc.OverlapScoreWeight != nil {
		sc.OverlapScoreWeight = *kc.OverlapScoreWeight
	}
	sc.Temperature = kc.Temperature
	monitor, err := kv.NewLoadMonitor(kc.Busy)
	if err != nil {
		return nil, err
	}
	sched, err := kv.NewScheduler(sc, kv.SchedulerDeps{Busy: monitor, Logger: s.log})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &kvModel{cancel: cancel, dpSize: max(1, card.RuntimeConfig.DataParallelSize), monitor: monitor,
		capacity: kv.WorkerCapacity{
			TotalKVBlocks:       uint64(max(0, card.RuntimeConfig.TotalKVBlocks)),
			MaxNumBatchedTokens: uint64(max(0, card.RuntimeConfig.MaxNumBatchedTokens)),
			DataParallelSize:    uint32(max(1, card.RuntimeConfig.DataParallelSize)),
		}}
	// Workers publish their per-pass load on the namespace's kv_metrics
	// subject: it feeds busy detection.
	loadSubject := kvblock.LoadMetricsSubject(ep.Namespace)
	if err := s.rt.Subscribe(ctx, loadSubject, func(b []byte) {
		var ev kvblock.LoadEvent
		if kvblock.Unmarshal(b, &ev) == nil {
			monitor.ObserveLoadEvent(ev)
		}
	}); err != nil && !errors.Is(err, runtime.ErrNoEventPlane) {
		cancel()
		return nil, err
	}
	seqCfg := kv.DefaultSequencesConfig(bs)
	seqCfg.TrackActiveBlocks = !kc.NoTrackActiveBlocks
	seqCfg.RouterID = s.rt.InstanceID()
	var seqDeps kv.SequencesDeps
	subject := kvblock.KVEventsSubject(ep.Namespace, ep.Component)
	replicaSubject := kvblock.ComponentSubject(ep.Namespace, ep.Component, kv.ActiveSequencesTopic)
	if kc.ReplicaSync {
		seqDeps.Publish = func(ev kv.SequenceEvent) {
			b, err := kvblock.Marshal(ev)
			if err == nil {
				err = s.rt.Publish(ctx, replicaSubject, b)
			}
			if err != nil && !errors.Is(err, runtime.ErrNoEventPlane) {
				s.log.Debug("kv router: replica event not published", "err", err)
			}
		}
	}
	seqs, err := kv.NewSequences(seqCfg, seqDeps)
	if err != nil {
		cancel()
		return nil, err
	}
	if kc.ReplicaSync {
		err := s.rt.Subscribe(ctx, replicaSubject, func(b []byte) {
			var ev kv.SequenceEvent
			if kvblock.Unmarshal(b, &ev) == nil {
				_ = seqs.Apply(ev)
			}
		})
		if errors.Is(err, runtime.ErrNoEventPlane) {
			s.log.Warn("kv router: --router-replica-sync needs the NATS event plane (--request-plane nats); replicas will not share load", "model", card.DisplayName)
		} else if err != nil {
			cancel()
			return nil, err
		}
	}

	var match interface {
		FindMatches([]uint64) kv.OverlapScores
	}
	m.mode = "events"
	if !kc.NoEvents {
		idx := kv.NewIndexer(kv.IndexerOptions{Metrics: s.kv.indexer})
		m.sync = kv.NewEventSync(idx, kv.NewRuntimeQuerier(s.rt, ep.Namespace, ep.Component), s.log)
		err := s.rt.Subscribe(ctx, subject, func(b []byte) { m.sync.HandleMessage(ctx, b) })
		switch {
		case errors.Is(err, runtime.ErrNoEventPlane):
			m.degraded.Store(true)
			m.sync = nil
			s.log.Warn("kv router: no KV event publishers can be heard: the event plane needs NATS (--request-plane nats); "+
				"falling back to approximate mode (routing decisions stand in for KV events)", "model", card.DisplayName, "subject", subject)
		case err != nil:
			cancel()
			return nil, err
		default:
			match = idx
		}
	}
	if match == nil {
		m.mode = "approximate"
		ttl := kc.TTL
		if ttl == 0 {
			ttl = kv.DefaultApproxTTL
		}
		m.approx = kv.NewApproxIndexer(kv.ApproxOptions{TTL: ttl, Metrics: s.kv.indexer})
		m.done.Add(1)
		go func() {
			defer m.done.Done()
			_ = m.approx.Run(ctx)
		}()
		match = m.approx
	}
	s.kv.mode.WithLabelValues(card.DisplayName, m.mode).Set(1)
	m.router = kv.NewRouter(kv.RouterConfig{BlockSize: bs, DPSize: m.dpSize}, kv.RouterDeps{
		Next: next, Matcher: match, Approx: m.approx, Scheduler: sched, Sequences: seqs, Metrics: s.kv.router, Logger: s.log,
	})
	s.log.Info("kv router: ready", "model", card.DisplayName, "mode", m.mode, "block_size", bs,
		"overlap_score_weight", sc.OverlapScoreWeight, "temperature", sc.Temperature)
	return m, nil
}

// workerJoined loads a new worker's cached blocks (a dump of its local
// index), for each dp rank.
func (m *kvModel) workerJoined(id uint64) {
	if m == nil {
		return
	}
	m.monitor.SetCapacity(id, m.capacity)
	if m.sync == nil {
		return
	}
	for r := 0; r < m.dpSize; r++ {
		m.sync.Resync(context.Background(), kv.Worker{ID: id, DPRank: uint32(r)})
	}
}

// workerLeft forgets a worker.
func (m *kvModel) workerLeft(id uint64) {
	if m == nil {
		return
	}
	if m.sync != nil {
		m.sync.RemoveWorker(id)
	}
	m.monitor.RemoveWorker(id)
	m.router.RemoveWorker(id)
}

// close stops the model's KV goroutines and subscriptions.
func (m *kvModel) close() {
	if m == nil {
		return
	}
	m.cancel()
	m.done.Wait()
}
