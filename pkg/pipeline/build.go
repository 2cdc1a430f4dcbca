package pipeline

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/dynamo-go/dynamo/pkg/migration"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/prefill"
	"github.com/dynamo-go/dynamo/pkg/preprocessor"
	"github.com/dynamo-go/dynamo/pkg/router"
	"github.com/dynamo-go/dynamo/pkg/router/affinity"
	"github.com/dynamo-go/dynamo/pkg/router/kv"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// build loads the card's tokenizer and templates (a card without them,
// whose engine processes both sides, tokenizes through the workers'
// tokenize endpoint) and wires the model's chain, each stage wrapping the
// next:
//
//	[admission] -> migration -> prefill stage -> [session affinity] -> [KV router] -> push router -> the workers of ep
//
// (the prefill stage passes requests on until the model's prefill
// workers are attached: Registry.attachPrefill)
//
// Admission is built first and handed to the routers it gates. A LoRA
// adapter's card (modelcard.Lora) gets a chain of its own, routed to the
// workers that published it, those where it is active first
// (loraStates), whose head names the adapter in each request
// (loraStage).
//
// It starts the chain's goroutines (the KV router's Run) under the
// model's own context, which Model.close ends.
func (r *Registry) build(ctx context.Context, card *modelcard.Card, ep runtime.EndpointID) (*Model, error) {
	if r.cfg.KVCacheBlockSize > 0 {
		card.KVCacheBlockSize = uint32(r.cfg.KVCacheBlockSize)
	}
	workers := newModelInstances(nil)
	popts := preprocessor.Options{Clock: r.clock, TracerProvider: r.tp, ConversationCacheBytes: r.cfg.ConversationCacheBytes}
	if card.RuntimeConfig.Preprocessing == modelcard.ProcessingEngine {
		popts.EngineTokenizer = newWorkerTokenizer(r.rt, ep, workers.serves)
	}
	pre, err := preprocessor.NewModel(card, popts)
	if err != nil {
		return nil, err
	}
	if err := pre.ParserError(); err != nil {
		r.log.Warn("model served without an output parser its card names", "model", card.DisplayName, "err", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	client, err := r.rt.Endpoint(ep).Client(cctx)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", ep.Path(), err)
	}
	workers.Client = client
	m := &Model{name: card.DisplayName, card: card, pre: pre, workers: workers, ep: ep, keys: map[string]bool{},
		seqsPerRank: uint64(max(0, card.RuntimeConfig.MaxNumSeqs))}
	// Admission first: the routers it gates are handed it.
	adm := r.admission(card, m)
	m.admit = adm
	policy := r.policy()
	pick := spread(policy, adm)
	if card.Lora != nil {
		pick = loraPolicy{Policy: pick, states: r.loraStates, name: card.Lora.Name}
	}
	push := router.New(m.workers, pick, r.log, r.tp)
	if ll, ok := policy.(*router.LeastLoaded); ok {
		ll.Watch(push)
	}
	if adm != nil {
		push.OnLoadChange(adm.Kick)
	}
	m.push = push
	var next backend.Generator = push
	var decode interface {
		Decide(*backend.Request) (*backend.Placement, error)
	}
	if r.cfg.RouterMode == RouterKV {
		candidates := gatedCandidates(push, adm)
		if card.Lora != nil {
			candidates = loraCandidates{Pusher: candidates, states: r.loraStates, name: card.Lora.Name}
		}
		if m.kv, err = r.newKVWith(r.cfg.KV, card, ep, candidates, r.kvMet, kick(adm)); err != nil {
			return nil, fmt.Errorf("kv router: %w", err)
		}
		next, decode = m.kv, m.kv
	} else if r.cfg.Queue != nil && r.rt.HasEventPlane() {
		if m.load, err = kv.NewLoadMonitor(kv.BusyThresholds{}); err != nil {
			return nil, err
		}
	}
	if ttl := r.cfg.SessionAffinityTTL; ttl > 0 {
		m.sessions = affinity.NewTable(affinity.Config{TTL: ttl, Bus: r.rt, Subject: kvblock.ComponentSubject(ep.Namespace, ep.Component, sessionTopic),
			Metrics: r.affMet, Model: card.DisplayName, Logger: r.log, Clock: r.clock})
		var gate affinity.Gate
		if adm != nil {
			gate = adm.Unsaturated
		}
		next = affinity.NewStage(next, m.sessions, push, gate)
	}
	bs := int(card.KVCacheBlockSize)
	if bs <= 0 {
		bs = modelcard.DefaultBlockSize
	}
	m.prefill = prefill.New(next, decode, prefill.Config{
		Model: card.DisplayName, Enforce: r.cfg.EnforceDisagg, Retries: r.migrationLimit(card), Conditional: r.cfg.ConditionalDisagg,
		BlockSize: bs, DecodeOverrides: m.kv != nil, Metrics: r.preMet, Logger: r.log, TracerProvider: r.tp,
	})
	m.head = migration.New(m.prefill, migration.Config{
		Model: card.DisplayName, Limit: r.migrationLimit(card), MaxSeqLen: r.cfg.MigrationMaxSeqLen,
		Metrics: r.migMet, Logger: r.log, TracerProvider: r.tp,
	})
	if adm != nil {
		m.head = adm.Before(m.head) // in front of migration: a migration rides on the admitted slot
	}
	if card.Lora != nil {
		m.head = loraStage{next: m.head, name: card.Lora.Name}
	}
	r.start(ctx, m)
	return m, nil
}

// policy returns the push router's policy for the configured mode (KV
// routing chooses its worker before the push router does).
func (r *Registry) policy() router.Policy {
	switch r.cfg.RouterMode {
	case RouterRandom:
		return router.Random{}
	case RouterLeastLoaded:
		return &router.LeastLoaded{}
	}
	return &router.RoundRobin{}
}

// sessionTopic is the topic, under the model's component, on which its
// frontends share session bindings.
const sessionTopic = "session_affinity"

// newKVWith builds KV routing with cfg over the workers of ep in front of
// push, recording on met (nil: nothing; the prefill pools' routers do not
// share the decode routers' metrics, whose series have no role), calling
// changed (when not nil) after each load event a worker publishes.
func (r *Registry) newKVWith(cfg kv.Config, card *modelcard.Card, ep runtime.EndpointID, push kv.Pusher, met *kv.Metrics, changed func()) (*kv.Router, error) {
	bs := int(card.KVCacheBlockSize)
	if bs <= 0 {
		bs = modelcard.DefaultBlockSize
	}
	rc := card.RuntimeConfig
	info := kv.ModelInfo{Name: card.DisplayName, Endpoint: ep, BlockSize: bs, Capacity: kv.WorkerCapacity{
		TotalKVBlocks:       uint64(max(0, rc.TotalKVBlocks)),
		MaxNumBatchedTokens: uint64(max(0, rc.MaxNumBatchedTokens)),
		DataParallelSize:    uint32(max(1, rc.DataParallelSize)),
	}}
	return kv.NewRouter(cfg, info, kv.RouterDeps{
		Events: r.rt, Querier: kv.NewRuntimeQuerier(r.rt, ep.Namespace, ep.Component), Next: push,
		Metrics: met, Logger: r.log, LoadChanged: changed,
	})
}

// start runs the model's goroutines until Model.close: the KV router's
// Run (or, in other modes with an event plane, the following of the
// workers' published load) and the session table's. A KV router whose
// Run fails (its subscriptions could not be opened) keeps routing on what
// it knows; the failure is logged.
func (r *Registry) start(ctx context.Context, m *Model) {
	mctx, stop := context.WithCancel(ctx)
	m.stop, m.done = stop, make(chan struct{})
	var wg sync.WaitGroup
	switch {
	case m.kv != nil:
		wg.Go(func() {
			if err := m.kv.Run(mctx); err != nil {
				r.log.Error("pipeline: KV routing stopped; requests are routed without fresh KV events or load", "model", m.name, "err", err)
			}
		})
	case m.load != nil:
		wg.Go(func() {
			if err := r.followLoad(mctx, m); err != nil {
				r.log.Error("pipeline: the workers' published load is not followed; admission counts this frontend's requests only", "model", m.name, "err", err)
				return
			}
			<-mctx.Done()
		})
	}
	if m.sessions != nil {
		wg.Go(func() { _ = m.sessions.Run(mctx) })
	}
	go func() {
		wg.Wait()
		close(m.done)
	}()
}
