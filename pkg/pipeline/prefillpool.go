package pipeline

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/prefill"
	"github.com/dynamo-go/dynamo/pkg/router"
	"github.com/dynamo-go/dynamo/pkg/router/kv"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// prefillPool is one model's prefill workers (cards of model type
// Prefill under the model's name): the prefill router over their endpoint
// (KV-aware with --router-mode kv, without active-block tracking; else
// the frontend's simple policy) and each worker's bootstrap address. It is
// a prefill.Pool; the registry attaches it to the model's prefill stage
// while the model is served.
type prefillPool struct {
	name    string
	card    *modelcard.Card // the first prefill worker's
	ep      runtime.EndpointID
	workers *modelInstances
	push    *router.PushRouter
	policy  router.Policy
	kv      *kv.Router // nil unless RouterKV

	mu   sync.RWMutex
	keys map[string]uint64                           // card key -> instance id; guarded by Registry.mu
	boot map[uint64]*modelcard.DisaggregatedEndpoint // instance id -> bootstrap address

	stop context.CancelFunc
	done chan struct{}
}

var _ prefill.Pool = (*prefillPool)(nil)

// newPrefillPool builds the pool of the prefill workers of card's model on
// ep and starts its goroutines (the prefill KV router's Run) under ctx.
func (r *Registry) newPrefillPool(ctx context.Context, card *modelcard.Card, ep runtime.EndpointID) (*prefillPool, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	client, err := r.rt.Endpoint(ep).Client(cctx)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", ep.Path(), err)
	}
	p := &prefillPool{name: card.DisplayName, card: card, ep: ep, workers: newModelInstances(client), policy: r.policy(),
		keys: map[string]uint64{}, boot: map[uint64]*modelcard.DisaggregatedEndpoint{}}
	p.push = router.New(p.workers, p.policy, r.log, r.tp)
	if r.cfg.RouterMode == RouterKV {
		cfg := r.cfg.KV
		cfg.NoTrackActiveBlocks = true // a prefill worker decodes nothing
		if p.kv, err = r.newKVWith(cfg, card, ep, p.push, nil, nil); err != nil {
			return nil, fmt.Errorf("prefill kv router: %w", err)
		}
	}
	pctx, stop := context.WithCancel(ctx)
	p.stop, p.done = stop, make(chan struct{})
	if p.kv == nil {
		close(p.done)
		return p, nil
	}
	go func() {
		defer close(p.done)
		if err := p.kv.Run(pctx); err != nil {
			r.log.Error("pipeline: prefill KV routing stopped; prefills are routed without fresh KV events", "model", p.name, "err", err)
		}
	}()
	return p, nil
}

// Generate routes a prefill request.
func (p *prefillPool) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	if p.kv != nil {
		return p.kv.Generate(ctx, req, emit)
	}
	return p.push.Generate(ctx, req, emit)
}

// Available returns the prefill workers that can take a request now.
func (p *prefillPool) Available() []uint64 { return p.workers.Available() }

// Pick chooses a prefill worker without booking its load (with a simple
// policy, the round-robin pointer moves on).
func (p *prefillPool) Pick(req *backend.Request) (*backend.Placement, error) {
	if p.kv != nil {
		return p.kv.Decide(req)
	}
	ids := p.workers.Available()
	if len(ids) == 0 {
		return nil, fmt.Errorf("%w found for endpoint %s", router.ErrNoInstances, p.ep.Path())
	}
	id, err := p.policy.Pick(req, ids)
	if err != nil {
		return nil, err
	}
	return &backend.Placement{WorkerID: id}, nil
}

// Bootstrap returns worker id's bootstrap address, if its card has one.
func (p *prefillPool) Bootstrap(id uint64) (string, int, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	b := p.boot[id]
	if b == nil || b.BootstrapHost == "" || b.BootstrapPort <= 0 {
		return "", 0, false
	}
	return b.BootstrapHost, b.BootstrapPort, true
}

func (p *prefillPool) addWorker(ctx context.Context, id uint64, card *modelcard.Card) {
	p.mu.Lock()
	p.boot[id] = card.RuntimeConfig.DisaggregatedEndpoint
	p.mu.Unlock()
	if p.kv != nil {
		p.kv.AddWorker(ctx, id)
	}
	p.workers.add(id)
}

func (p *prefillPool) removeWorker(id uint64) {
	p.workers.remove(id)
	if p.kv != nil {
		p.kv.RemoveWorker(id)
	}
	p.mu.Lock()
	delete(p.boot, id)
	p.mu.Unlock()
}

// close ends the pool's goroutines and waits for them.
func (p *prefillPool) close() {
	p.stop()
	<-p.done
}

// sameModel reports whether a and b are cards of one model in different
// roles: equal but for their model type and worker type. Workers of one
// model publish the same mdc_sum whatever their role; until every worker
// does (the checksum covers the role fields), the sums are compared with
// the role fields set alike.
func sameModel(a, b *modelcard.Card) bool {
	if a.MDCSum == b.MDCSum {
		return true
	}
	ca, cb := *a, *b
	ca.ModelType, ca.WorkerType = 0, ""
	cb.ModelType, cb.WorkerType = 0, ""
	sa, err1 := ca.Checksum()
	sb, err2 := cb.Checksum()
	return err1 == nil && err2 == nil && sa == sb
}
