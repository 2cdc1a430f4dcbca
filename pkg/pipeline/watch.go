package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
)

// ErrWatchEnded is returned by Run when discovery stopped reporting before
// Run's context ended (the runtime lost its store).
var ErrWatchEnded = errors.New("pipeline: discovery watch ended")

// Run lists, then watches, the model cards in discovery and keeps the
// models in step until ctx ends; beside them it follows the LoRA
// registrations (loraRegistrations) and the adapters active in the
// workers' engines (loraStates). Then it stops every model's goroutines
// and returns nil; it returns ErrWatchEnded if discovery stops first.
func (r *Registry) Run(ctx context.Context) error {
	prefix := modelcard.Prefix
	if r.cfg.Namespace != "" {
		prefix = modelcard.NamespacePrefix(r.cfg.Namespace)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer r.closeAll()
	defer r.loaders.Wait()
	var regs sync.WaitGroup
	defer regs.Wait()
	defer cancel()
	regs.Go(func() { r.loraRegs.run(ctx) })
	regs.Go(func() { r.followLoraStates(ctx) })
	events, err := r.rt.Store().Watch(ctx, prefix)
	if err != nil {
		return fmt.Errorf("pipeline: watch %s: %w", prefix, err)
	}
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return ErrWatchEnded
			}
			r.apply(ctx, ev)
		case p := <-r.loaded:
			r.install(ctx, p)
		}
	}
}

// apply brings the models in step with one discovery event.
func (r *Registry) apply(ctx context.Context, ev discovery.Event) {
	switch ev.Type {
	case discovery.EventResync:
		live := map[string]bool{}
		for _, kv := range ev.Snapshot {
			live[kv.Key] = true
			r.addCard(ctx, kv.Key, kv.Value)
		}
		for _, key := range r.knownKeys() {
			if !live[key] {
				r.removeCard(key)
			}
		}
		r.mu.Lock()
		r.synced = true
		r.mu.Unlock()
	case discovery.EventPut:
		r.addCard(ctx, ev.Key, ev.Value)
	case discovery.EventDelete:
		r.removeCard(ev.Key)
	}
}

func (r *Registry) knownKeys() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	keys := make([]string, 0, len(r.byKey)+len(r.pendingKeys)+len(r.prefillKeys))
	for k := range r.byKey {
		keys = append(keys, k)
	}
	for k := range r.pendingKeys {
		keys = append(keys, k)
	}
	for k := range r.prefillKeys {
		keys = append(keys, k)
	}
	return keys
}

// addCard registers one worker's card: the first worker of a model starts
// loading its files (load), later workers join the model, or its pending
// load, if their card matches.
func (r *Registry) addCard(ctx context.Context, key string, value []byte) {
	r.mu.RLock()
	_, known := r.byKey[key]
	_, loading := r.pendingKeys[key]
	_, prefilling := r.prefillKeys[key]
	r.mu.RUnlock()
	if known || loading || prefilling {
		return
	}
	rec, card, ok := r.decodeCard(key, value)
	if !ok {
		return
	}
	if card.ModelType.Has(modelcard.ModelPrefill) {
		r.addPrefillCard(ctx, key, rec, card)
		return
	}
	r.mu.Lock()
	m := r.models[card.DisplayName]
	p := r.pending[card.DisplayName]
	switch {
	case m != nil:
		r.mu.Unlock()
		r.joinModel(ctx, m, key, rec, card)
		return
	case p != nil && p.card.MDCSum != card.MDCSum:
		r.mu.Unlock()
		r.log.Warn("pipeline: worker's model card differs from the model's; instance ignored",
			"model", card.DisplayName, "key", key, "mdc_sum", card.MDCSum, "model_mdc_sum", p.card.MDCSum)
		return
	case p != nil:
		p.recs[key] = rec
		r.pendingKeys[key] = p
		r.mu.Unlock()
		return
	}
	p = &pendingModel{card: card, ep: runtime.EndpointID{Namespace: rec.Namespace, Component: rec.Component, Name: rec.Endpoint},
		recs: map[string]*modelcard.Record{key: rec}, start: time.Now()}
	var lctx context.Context
	lctx, p.cancel = context.WithCancel(ctx)
	r.pending[card.DisplayName] = p
	r.pendingKeys[key] = p
	r.loaders.Add(1)
	r.mu.Unlock()
	r.log.Info("pipeline: new model; loading its files from its workers", "model", card.DisplayName,
		"files", len(card.Files()), "bytes", card.Size())
	go r.load(lctx, p)
}

// install builds the chain of a model whose files are loaded and serves it
// with the workers known by now. It runs on Run's goroutine.
func (r *Registry) install(ctx context.Context, p *pendingModel) {
	r.mu.Lock()
	if r.pending[p.card.DisplayName] != p {
		r.mu.Unlock() // every worker left while the files loaded
		return
	}
	delete(r.pending, p.card.DisplayName)
	for key := range p.recs {
		delete(r.pendingKeys, key)
	}
	r.mu.Unlock()
	p.cancel()
	card := p.card
	m, err := r.build(ctx, card, p.ep)
	if err != nil {
		r.log.Error("pipeline: cannot serve model", "model", card.DisplayName, "err", err)
		return
	}
	m.files = fileSums(card)
	r.files.cache.acquire(m.files)
	for key, rec := range p.recs {
		m.keys[key] = true
		m.addWorker(ctx, rec.InstanceID)
	}
	r.mu.Lock()
	for _, n := range card.Names() {
		if other := r.names[n]; other != nil && other != m {
			r.log.Warn("pipeline: served name already taken by another model; alias ignored", "name", n, "model", m.name, "owner", other.name)
			continue
		}
		r.names[n] = m
	}
	r.models[m.name] = m
	for key := range p.recs {
		r.byKey[key] = m
	}
	r.mu.Unlock()
	r.mu.RLock()
	pool := r.prefills[m.name]
	r.mu.RUnlock()
	if pool != nil {
		r.attachPrefill(m, pool)
	}
	r.metrics.SetModel(m.name, ModelConfig{
		ContextLength:       int(card.ContextLength),
		KVCacheBlockSize:    int(card.KVCacheBlockSize),
		TotalKVBlocks:       card.RuntimeConfig.TotalKVBlocks,
		MaxNumSeqs:          card.RuntimeConfig.MaxNumSeqs,
		MaxNumBatchedTokens: card.RuntimeConfig.MaxNumBatchedTokens,
		MigrationLimit:      r.migrationLimit(card),
	})
	cached, cachedBytes := r.files.cache.stats()
	r.log.Info("pipeline: model added", "model", m.name, "aliases", card.Aliases, "endpoint", p.ep.Path(), "workers", len(p.recs),
		"context_length", card.ContextLength, "chat_template", m.pre.HasChatTemplate(), "took", time.Since(p.start).Round(time.Millisecond),
		"file_cache_files", cached, "file_cache_bytes", cachedBytes)
}

// decodeCard reads a card record; what cannot be served is logged and
// skipped.
func (r *Registry) decodeCard(key string, value []byte) (*modelcard.Record, *modelcard.Card, bool) {
	rec, err := modelcard.DecodeRecord(value)
	if err != nil {
		r.log.Warn("pipeline: ignoring a model record that does not decode", "key", key, "err", err)
		return nil, nil, false
	}
	card, err := rec.DecodeCard()
	if err != nil {
		r.log.Warn("pipeline: ignoring a model card that does not verify", "key", key, "err", err)
		return nil, nil, false
	}
	if card.ModelType&(modelcard.ModelChat|modelcard.ModelCompletions|modelcard.ModelEmbedding|modelcard.ModelPrefill) == 0 {
		r.log.Info("pipeline: ignoring a model this frontend cannot serve", "model", card.DisplayName, "model_type", card.ModelType)
		return nil, nil, false
	}
	return rec, card, true
}

// joinModel adds a worker to a served model, if its card matches.
func (r *Registry) joinModel(ctx context.Context, m *Model, key string, rec *modelcard.Record, card *modelcard.Card) {
	if m.card.MDCSum != card.MDCSum {
		r.log.Warn("pipeline: worker's model card differs from the model's; instance ignored",
			"model", card.DisplayName, "key", key, "mdc_sum", card.MDCSum, "model_mdc_sum", m.card.MDCSum)
		return
	}
	r.mu.Lock()
	m.keys[key] = true
	r.byKey[key] = m
	workers := len(m.keys)
	r.mu.Unlock()
	m.addWorker(ctx, rec.InstanceID)
	r.log.Info("pipeline: worker joined model", "model", m.name, "workers", workers)
}

// removeCard drops one worker's card; the model goes with its last worker,
// and a pending load with its last worker too.
func (r *Registry) removeCard(key string) {
	r.mu.Lock()
	if p := r.prefillKeys[key]; p != nil {
		r.mu.Unlock()
		r.removePrefillCard(key, p)
		return
	}
	if p := r.pendingKeys[key]; p != nil {
		delete(r.pendingKeys, key)
		delete(p.recs, key)
		if len(p.recs) == 0 {
			delete(r.pending, p.card.DisplayName)
			p.cancel()
			r.log.Info("pipeline: model's last worker left before its files loaded", "model", p.card.DisplayName)
		}
		r.mu.Unlock()
		return
	}
	m := r.byKey[key]
	if m == nil {
		r.mu.Unlock()
		return
	}
	delete(r.byKey, key)
	delete(m.keys, key)
	workers := len(m.keys)
	last := workers == 0
	if last {
		delete(r.models, m.name)
		for n, owner := range r.names {
			if owner == m {
				delete(r.names, n)
			}
		}
	}
	r.mu.Unlock()
	if p, err := modelcard.ParseKey(key); err == nil {
		m.removeWorker(p.InstanceID)
	}
	if last {
		m.close()
		r.files.cache.release(m.files)
		r.metrics.RemoveModel(m.name)
		r.admMet.Remove(m.name)
		r.log.Info("pipeline: model removed: its last worker left", "model", m.name)
	} else {
		r.log.Info("pipeline: worker left model", "model", m.name, "workers", workers)
	}
}

// closeAll stops every model's goroutines (at the end of Run).
func (r *Registry) closeAll() {
	for _, m := range r.Models() {
		m.close()
	}
	r.mu.RLock()
	pools := make([]*prefillPool, 0, len(r.prefills))
	for _, p := range r.prefills {
		pools = append(pools, p)
	}
	r.mu.RUnlock()
	for _, p := range pools {
		p.close()
	}
}

// migrationLimit is the frontend's limit when set, else the card's.
func (r *Registry) migrationLimit(card *modelcard.Card) int {
	if r.cfg.MigrationLimit != nil {
		return *r.cfg.MigrationLimit
	}
	return int(card.MigrationLimit)
}
