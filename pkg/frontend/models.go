package frontend

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/dynamo-go/dynamo/pkg/migration"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/preprocessor"
	"github.com/dynamo-go/dynamo/pkg/router"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
)

// model is one served model: its card, preprocessor and pipeline, and the
// card keys (one per worker instance) that keep it alive.
type model struct {
	name     string
	card     *modelcard.Card
	pre      *preprocessor.Model
	pipeline preprocessor.Generator
	workers  *modelInstances
	keys     map[string]bool
	kv       *kvModel // KV routing state, in router mode kv
}

// ready reports whether a worker can take the model's requests now: a
// card alone is not enough, its instance must be registered too.
func (m *model) ready() bool { return len(m.workers.Available()) > 0 }

// registry maps served names (canonical and aliases) to models.
type registry struct {
	mu     sync.RWMutex
	models map[string]*model // canonical name -> model
	names  map[string]*model // every served name -> model
	byKey  map[string]*model // card key -> model
	synced bool              // the first discovery snapshot was applied
}

func newRegistry() *registry {
	return &registry{models: map[string]*model{}, names: map[string]*model{}, byKey: map[string]*model{}}
}

// lookup returns the model served under name.
func (r *registry) lookup(name string) *model {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.names[name]
}

// ready returns the models that have an available worker, sorted.
func (r *registry) ready() []*model {
	all := r.list()
	out := all[:0]
	for _, m := range all {
		if m.ready() {
			out = append(out, m)
		}
	}
	return out
}

// list returns the models, sorted by name.
func (r *registry) list() []*model {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*model, 0, len(r.models))
	for _, m := range r.models {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func (r *registry) isSynced() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.synced
}

// watchModels lists then watches the model cards and keeps the registry in
// step until ctx ends.
func (s *Service) watchModels(ctx context.Context) error {
	prefix := modelcard.Prefix
	if s.cfg.Namespace != "" {
		prefix = modelcard.NamespacePrefix(s.cfg.Namespace)
	}
	events, err := s.rt.Store().Watch(ctx, prefix)
	if err != nil {
		return fmt.Errorf("frontend: watch %s: %w", prefix, err)
	}
	for ev := range events {
		switch ev.Type {
		case discovery.EventResync:
			live := map[string]bool{}
			for _, kv := range ev.Snapshot {
				live[kv.Key] = true
				s.addCard(ctx, kv.Key, kv.Value)
			}
			for _, key := range s.knownKeys() {
				if !live[key] {
					s.removeCard(key)
				}
			}
			s.models.mu.Lock()
			s.models.synced = true
			s.models.mu.Unlock()
		case discovery.EventPut:
			s.addCard(ctx, ev.Key, ev.Value)
		case discovery.EventDelete:
			s.removeCard(ev.Key)
		}
	}
	return nil
}

func (s *Service) knownKeys() []string {
	s.models.mu.RLock()
	defer s.models.mu.RUnlock()
	keys := make([]string, 0, len(s.models.byKey))
	for k := range s.models.byKey {
		keys = append(keys, k)
	}
	return keys
}

// addCard registers one worker's card: the first worker of a model builds
// its pipeline; later workers join it if their card matches.
func (s *Service) addCard(ctx context.Context, key string, value []byte) {
	s.models.mu.RLock()
	_, known := s.models.byKey[key]
	s.models.mu.RUnlock()
	if known {
		return
	}
	rec, err := modelcard.DecodeRecord(value)
	if err != nil {
		s.log.Warn("frontend: ignoring a model record that does not decode", "key", key, "err", err)
		return
	}
	card, err := rec.DecodeCard()
	if err != nil {
		s.log.Warn("frontend: ignoring a model card that does not verify", "key", key, "err", err)
		return
	}
	if !card.ModelType.Has(modelcard.ModelChat) && !card.ModelType.Has(modelcard.ModelCompletions) {
		s.log.Info("frontend: ignoring a model this frontend cannot serve", "model", card.DisplayName, "model_type", card.ModelType)
		return
	}
	s.models.mu.RLock()
	m := s.models.models[card.DisplayName]
	s.models.mu.RUnlock()
	if m != nil {
		if m.card.MDCSum != card.MDCSum {
			s.log.Warn("frontend: worker's model card differs from the model's; instance ignored",
				"model", card.DisplayName, "key", key, "mdc_sum", card.MDCSum, "model_mdc_sum", m.card.MDCSum)
			return
		}
		s.models.mu.Lock()
		m.keys[key] = true
		s.models.byKey[key] = m
		s.models.mu.Unlock()
		m.workers.add(rec.InstanceID)
		m.kv.workerJoined(rec.InstanceID)
		s.log.Info("frontend: worker joined model", "model", m.name, "workers", len(m.keys))
		return
	}
	ep := runtime.EndpointID{Namespace: rec.Namespace, Component: rec.Component, Name: rec.Endpoint}
	start := time.Now()
	m, err = s.buildModel(ctx, card, ep)
	if err != nil {
		s.log.Error("frontend: cannot serve model", "model", card.DisplayName, "key", key, "err", err)
		return
	}
	m.keys[key] = true
	m.workers.add(rec.InstanceID)
	m.kv.workerJoined(rec.InstanceID)
	s.models.mu.Lock()
	for _, n := range card.Names() {
		if other := s.models.names[n]; other != nil && other != m {
			s.log.Warn("frontend: served name already taken by another model; alias ignored", "name", n, "model", m.name, "owner", other.name)
			continue
		}
		s.models.names[n] = m
	}
	s.models.models[m.name] = m
	s.models.byKey[key] = m
	s.models.mu.Unlock()
	s.metrics.SetModel(m.name, ModelConfig{
		ContextLength:       int(card.ContextLength),
		KVCacheBlockSize:    int(card.KVCacheBlockSize),
		TotalKVBlocks:       card.RuntimeConfig.TotalKVBlocks,
		MaxNumSeqs:          card.RuntimeConfig.MaxNumSeqs,
		MaxNumBatchedTokens: card.RuntimeConfig.MaxNumBatchedTokens,
		MigrationLimit:      s.migrationLimit(card),
	})
	s.log.Info("frontend: model added", "model", m.name, "aliases", card.Aliases, "endpoint", ep.Path(),
		"context_length", card.ContextLength, "chat_template", m.pre.HasChatTemplate(), "took", time.Since(start).Round(time.Millisecond))
}

// removeCard drops one worker's card; the model goes with its last worker.
func (s *Service) removeCard(key string) {
	s.models.mu.Lock()
	m := s.models.byKey[key]
	if m == nil {
		s.models.mu.Unlock()
		return
	}
	delete(s.models.byKey, key)
	delete(m.keys, key)
	var left uint64
	if p, err := modelcard.ParseKey(key); err == nil {
		m.workers.remove(p.InstanceID)
		left = p.InstanceID
	}
	last := len(m.keys) == 0
	if last {
		delete(s.models.models, m.name)
		for n, owner := range s.models.names {
			if owner == m {
				delete(s.models.names, n)
			}
		}
	}
	s.models.mu.Unlock()
	if left != 0 {
		m.kv.workerLeft(left)
	}
	if last {
		m.kv.close()
		s.metrics.RemoveModel(m.name)
		s.log.Info("frontend: model removed: its last worker left", "model", m.name)
	} else {
		s.log.Info("frontend: worker left model", "model", m.name, "workers", len(m.keys))
	}
}

// migrationLimit is the frontend's limit when set, else the card's.
func (s *Service) migrationLimit(card *modelcard.Card) int {
	if s.cfg.MigrationLimit != nil {
		return *s.cfg.MigrationLimit
	}
	return int(card.MigrationLimit)
}

// buildModel loads the tokenizer and templates and wires the pipeline:
// preprocessor -> migration -> push router -> the card's endpoint.
func (s *Service) buildModel(ctx context.Context, card *modelcard.Card, ep runtime.EndpointID) (*model, error) {
	if s.cfg.KVCacheBlockSize > 0 {
		card.KVCacheBlockSize = uint32(s.cfg.KVCacheBlockSize)
	}
	pre, err := preprocessor.NewModel(card, preprocessor.Options{Clock: s.clock})
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	client, err := s.rt.Endpoint(ep).Client(cctx)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", ep.Path(), err)
	}
	var policy router.Policy = &router.RoundRobin{}
	if s.cfg.RouterMode == RouterRandom {
		policy = router.Random{}
	}
	workers := newModelInstances(client)
	push := router.New(workers, policy, s.log)
	var next migration.Generator = push.Engine()
	var kvm *kvModel
	if s.cfg.RouterMode == RouterKV {
		if kvm, err = s.newKVModel(card, ep, push.Engine()); err != nil {
			return nil, fmt.Errorf("kv router: %w", err)
		}
		next = kvm.router
	}
	mig := migration.New(next, migration.Config{
		Model: card.DisplayName, Limit: s.migrationLimit(card), MaxSeqLen: s.cfg.MigrationMaxSeqLen,
		Metrics: s.migMet, Logger: s.log,
	})
	return &model{name: card.DisplayName, card: card, pre: pre, pipeline: mig, workers: workers, keys: map[string]bool{}, kv: kvm}, nil
}

// instances returns every discovered worker instance of every model.
func (s *Service) instances() []runtime.Instance {
	var out []runtime.Instance
	seen := map[uint64]bool{}
	for _, m := range s.models.list() {
		for _, in := range m.workers.Instances() {
			if !seen[in.ID] {
				seen[in.ID] = true
				out = append(out, in)
			}
		}
	}
	slices.SortFunc(out, func(a, b runtime.Instance) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out
}
