package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// Errors of the LoRA operations.
var (
	// ErrNoBaseModel: the base model named for an adapter is not served.
	ErrNoBaseModel = errors.New("pipeline: base model not served")
	// ErrNoAdapter: no worker holds the adapter.
	ErrNoAdapter = errors.New("pipeline: LoRA adapter not served")
)

// loraWait bounds the wait, after workers loaded an adapter, for its
// cards to reach this frontend through discovery.
const loraWait = 10 * time.Second

// Adapter is a LoRA adapter the fleet serves, as discovery shows it, or
// one registered to load on demand.
type Adapter struct {
	Name, BaseModel, Source string
	// Instances are the workers that published it, sorted.
	Instances []uint64
	// ActiveOn are those of them where it was active in the engine at
	// the last poll (loraStates), sorted.
	ActiveOn []uint64
	// Replicas is its registration's: how many workers a request loads
	// it on when none holds it (0: not registered).
	Replicas int
}

// LoraOutcome is one worker's answer to a load or an unload.
type LoraOutcome struct {
	InstanceID uint64
	Err        error // nil: done
}

// Adapters returns the adapters of the served models and those
// registered, by name.
func (r *Registry) Adapters() []Adapter {
	var out []Adapter
	served := map[string]bool{}
	for _, m := range r.Models() {
		if l := m.card.Lora; l != nil {
			a := Adapter{Name: l.Name, BaseModel: l.BaseModel, Source: l.Source, Instances: m.instanceIDs(), ActiveOn: r.loraStates.activeOn(l.Name)}
			if reg, ok := r.loraRegs.get(l.Name); ok {
				a.Replicas = reg.Replicas
			}
			served[l.Name] = true
			out = append(out, a)
		}
	}
	for _, reg := range r.loraRegs.all() {
		if !served[reg.Name] {
			out = append(out, Adapter{Name: reg.Name, BaseModel: reg.BaseModel, Source: reg.Source, Instances: []uint64{}, Replicas: reg.Replicas})
		}
	}
	slices.SortFunc(out, func(a, b Adapter) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// RegisterLora keeps reg so that a request for its adapter loads it on
// reg.Replicas workers when no live worker holds it (EnsureLora), on
// every frontend.
func (r *Registry) RegisterLora(ctx context.Context, reg LoraRegistration) error {
	return r.loraRegs.put(ctx, reg)
}

// EnsureLora loads adapter name where its registration says, when it is
// registered and no live worker holds it, and reports whether it is
// served now. Concurrent requests for it wait for one load.
func (r *Registry) EnsureLora(ctx context.Context, name string) bool {
	reg, ok := r.loraRegs.get(name)
	if !ok || reg.Replicas <= 0 {
		return false
	}
	if m := r.Lookup(name); m != nil {
		return true
	}
	r.loraRegs.once(ctx, name, func() {
		if r.Lookup(name) != nil {
			return
		}
		r.log.Info("pipeline: loading a registered LoRA adapter on demand", "lora_name", name, "base_model", reg.BaseModel, "replicas", reg.Replicas)
		if _, err := r.LoadLora(ctx, reg.BaseModel, name, reg.Source, reg.Replicas); err != nil {
			r.log.Warn("pipeline: a registered LoRA adapter could not be loaded on demand", "lora_name", name, "err", err)
		}
	})
	return r.Lookup(name) != nil
}

// LoadLora asks workers of the base model to load adapter name from
// source (modelcard.LoraEndpoint): replicas of them (0: all), those that
// hold it already first. It returns each worker's outcome once the
// adapter is served here by every worker that loaded it (or loraWait
// passed).
func (r *Registry) LoadLora(ctx context.Context, base, name, source string, replicas int) ([]LoraOutcome, error) {
	m := r.Lookup(base)
	if m == nil || m.card.Lora != nil {
		return nil, fmt.Errorf("%w: %q", ErrNoBaseModel, base)
	}
	ids := m.instanceIDs()
	if a := r.Lookup(name); a != nil && a.card.Lora != nil {
		held := a.instanceIDs()
		slices.SortStableFunc(ids, func(x, y uint64) int { return boolRank(slices.Contains(held, x)) - boolRank(slices.Contains(held, y)) })
	}
	if replicas > 0 && replicas < len(ids) {
		ids = ids[:replicas]
	}
	out := r.callLora(ctx, m.ep, ids, modelcard.LoraRequest{Op: modelcard.LoraLoad, Name: name, Source: source})
	var loaded []uint64
	for _, o := range out {
		if o.Err == nil {
			loaded = append(loaded, o.InstanceID)
		}
	}
	r.waitAdapter(ctx, name, loaded)
	return out, nil
}

// UnloadLora forgets adapter name's registration and asks every worker
// that holds it to unload it.
func (r *Registry) UnloadLora(ctx context.Context, name string) ([]LoraOutcome, error) {
	registered, err := r.loraRegs.remove(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("pipeline: LoRA registration of %q: %w", name, err)
	}
	a := r.Lookup(name)
	if a == nil || a.card.Lora == nil {
		if registered {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: %q", ErrNoAdapter, name)
	}
	return r.callLora(ctx, a.ep, a.instanceIDs(), modelcard.LoraRequest{Op: modelcard.LoraUnload, Name: name}), nil
}

// callLora sends req to the lora endpoint of each of ids, at once.
func (r *Registry) callLora(ctx context.Context, ep runtime.EndpointID, ids []uint64, req modelcard.LoraRequest) []LoraOutcome {
	out := make([]LoraOutcome, len(ids))
	ep.Name = modelcard.LoraEndpoint
	client, err := r.rt.Endpoint(ep).Client(ctx)
	if err != nil {
		for i, id := range ids {
			out[i] = LoraOutcome{InstanceID: id, Err: fmt.Errorf("lora endpoint %s: %w", ep.Path(), err)}
		}
		return out
	}
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			_, err := askLora(ctx, client, id, req)
			out[i] = LoraOutcome{InstanceID: id, Err: err}
			args := []any{"lora_name", req.Name, "op", req.Op, "instance_id", fmt.Sprintf("%x", id)}
			if err != nil {
				r.log.Warn("pipeline: a worker refused a LoRA operation", append(args, "err", err)...)
			} else {
				r.log.Info("pipeline: LoRA operation done", args...)
			}
		})
	}
	wg.Wait()
	return out
}

// waitAdapter waits until adapter name is served by every one of ids (at
// most loraWait, or ctx).
func (r *Registry) waitAdapter(ctx context.Context, name string, ids []uint64) {
	if len(ids) == 0 {
		return
	}
	deadline := time.NewTimer(loraWait)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if a := r.Lookup(name); a != nil && a.card.Lora != nil {
			held := a.instanceIDs()
			if !slices.ContainsFunc(ids, func(id uint64) bool { return !slices.Contains(held, id) }) {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			r.log.Warn("pipeline: a LoRA adapter's workers loaded it, but their cards did not reach this frontend in time", "lora_name", name, "waited", loraWait)
			return
		case <-tick.C:
		}
	}
}

// instanceIDs returns the workers that published the model's card, sorted.
func (m *Model) instanceIDs() []uint64 {
	var ids []uint64
	for _, in := range m.workers.Instances() {
		ids = append(ids, in.ID)
	}
	slices.Sort(ids)
	return ids
}

func boolRank(held bool) int {
	if held {
		return 0
	}
	return 1
}
