package pipeline

import (
	"context"

	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// addPrefillCard registers a prefill worker's card (model type Prefill):
// the first one builds the model's prefill pool, which serves no requests
// of its own and is not listed as a model; it is attached to the model of
// the same name, when that model is served, as its prefill workers. A card
// that is not of the same model as the model's (or the pool's first) card
// is refused.
func (r *Registry) addPrefillCard(ctx context.Context, key string, rec *modelcard.Record, card *modelcard.Card) {
	name := card.DisplayName
	ep := runtime.EndpointID{Namespace: rec.Namespace, Component: rec.Component, Name: rec.Endpoint}
	r.mu.RLock()
	p, m, pend := r.prefills[name], r.models[name], r.pending[name]
	r.mu.RUnlock()
	var ref *modelcard.Card
	switch {
	case p != nil:
		ref = p.card
	case m != nil:
		ref = m.card
	case pend != nil:
		ref = pend.card
	}
	if ref != nil && !sameModel(ref, card) {
		r.log.Warn("pipeline: prefill worker's model card differs from the model's (mdc_sum); instance ignored",
			"model", name, "key", key, "mdc_sum", card.MDCSum, "model_mdc_sum", ref.MDCSum)
		return
	}
	if p != nil && p.ep != ep {
		r.log.Warn("pipeline: prefill worker on another endpoint than the model's other prefill workers; instance ignored",
			"model", name, "key", key, "endpoint", ep.Path(), "prefill_endpoint", p.ep.Path())
		return
	}
	created := false
	if p == nil {
		var err error
		if p, err = r.newPrefillPool(ctx, card, ep); err != nil {
			r.log.Error("pipeline: cannot route to the model's prefill workers", "model", name, "endpoint", ep.Path(), "err", err)
			return
		}
		created = true
	}
	r.mu.Lock()
	if created {
		r.prefills[name] = p
	}
	p.keys[key] = rec.InstanceID
	r.prefillKeys[key] = p
	workers := len(p.keys)
	m = r.models[name]
	r.mu.Unlock()
	p.addWorker(ctx, rec.InstanceID, card)
	_, _, bootstrap := p.Bootstrap(rec.InstanceID)
	r.log.Info("pipeline: prefill worker joined model", "model", name, "endpoint", ep.Path(), "prefill_workers", workers,
		"bootstrap", bootstrap, "model_served", m != nil)
	if created && m != nil {
		r.attachPrefill(m, p)
	}
}

// attachPrefill makes p the prefill workers of m, if they are of the same
// model.
func (r *Registry) attachPrefill(m *Model, p *prefillPool) {
	if !sameModel(m.card, p.card) {
		r.log.Warn("pipeline: the model's prefill workers publish another model card (mdc_sum); they are not used",
			"model", m.name, "mdc_sum", p.card.MDCSum, "model_mdc_sum", m.card.MDCSum)
		return
	}
	m.prefill.SetPool(p)
	r.log.Info("pipeline: disaggregated serving active: prefill on the model's prefill workers", "model", m.name, "prefill_endpoint", p.ep.Path())
}

// removePrefillCard drops a prefill worker's card; with the last one the
// pool goes, and the model is served decode-only again.
func (r *Registry) removePrefillCard(key string, p *prefillPool) {
	r.mu.Lock()
	id, ok := p.keys[key]
	delete(r.prefillKeys, key)
	delete(p.keys, key)
	workers := len(p.keys)
	last := ok && workers == 0
	if last {
		delete(r.prefills, p.name)
	}
	m := r.models[p.name]
	r.mu.Unlock()
	if !ok {
		return
	}
	p.removeWorker(id)
	if !last {
		r.log.Info("pipeline: prefill worker left model", "model", p.name, "prefill_workers", workers)
		return
	}
	if m != nil {
		m.prefill.SetPool(nil)
	}
	p.close()
	r.log.Info("pipeline: the model's last prefill worker left; disaggregated serving inactive", "model", p.name)
}
