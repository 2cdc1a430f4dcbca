package pipeline

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/router"
	"github.com/dynamo-go/dynamo/pkg/router/kv"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// loraPoll is how often the frontend asks the workers that hold adapters
// which ones are active in their engines.
const loraPoll = time.Second

// loraStates is what the workers that hold adapters last said of them
// (modelcard.LoraList): which adapters are active in each engine, and
// whether it has a free slot. An adapter's requests go first where it is
// active, then where a slot is free (a load, no swap), then anywhere it
// is held (a swap under --max-loras): loraTier. The answers are up to
// loraPoll old, and advisory: a worker loads what a request needs.
type loraStates struct {
	mu       sync.RWMutex
	byWorker map[uint64]modelcard.LoraResult
}

// tier narrows candidates, the workers that hold adapter name, to those
// where it is active, else to those with a free slot; else it returns
// them all.
func (s *loraStates) tier(name string, candidates []uint64) []uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var active, free []uint64
	for _, id := range candidates {
		res, ok := s.byWorker[id]
		if !ok {
			continue
		}
		if slices.ContainsFunc(res.Adapters, func(a modelcard.LoraState) bool { return a.Name == name && a.Active }) {
			active = append(active, id)
		} else if res.MaxLoras == 0 || res.ActiveSlots < res.MaxLoras {
			free = append(free, id)
		}
	}
	switch {
	case len(active) > 0:
		return active
	case len(free) > 0:
		return free
	}
	return candidates
}

// activeOn returns the workers where adapter name was active at the last
// poll, sorted.
func (s *loraStates) activeOn(name string) []uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []uint64
	for id, res := range s.byWorker {
		if slices.ContainsFunc(res.Adapters, func(a modelcard.LoraState) bool { return a.Name == name && a.Active }) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// followLoraStates polls, every loraPoll until ctx ends, the lora
// endpoint of each worker that holds an adapter.
func (r *Registry) followLoraStates(ctx context.Context) {
	clients := map[runtime.EndpointID]*runtime.Client{}
	tick := time.NewTicker(loraPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		byEndpoint := map[runtime.EndpointID][]uint64{}
		for _, m := range r.Models() {
			if m.card.Lora == nil {
				continue
			}
			ep := m.ep
			ep.Name = modelcard.LoraEndpoint
			for _, id := range m.instanceIDs() {
				if !slices.Contains(byEndpoint[ep], id) {
					byEndpoint[ep] = append(byEndpoint[ep], id)
				}
			}
		}
		next := map[uint64]modelcard.LoraResult{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for ep, ids := range byEndpoint {
			client := clients[ep]
			if client == nil {
				var err error
				if client, err = r.rt.Endpoint(ep).Client(ctx); err != nil {
					continue
				}
				clients[ep] = client
			}
			for _, id := range ids {
				wg.Go(func() {
					if res, err := listLoras(ctx, client, id); err == nil {
						mu.Lock()
						next[id] = res
						mu.Unlock()
					}
				})
			}
		}
		wg.Wait()
		r.loraStates.mu.Lock()
		r.loraStates.byWorker = next
		r.loraStates.mu.Unlock()
	}
}

// listLoras asks worker id which adapters it holds, within loraPoll.
func listLoras(ctx context.Context, client *runtime.Client, id uint64) (modelcard.LoraResult, error) {
	ctx, cancel := context.WithTimeout(ctx, loraPoll)
	defer cancel()
	return askLora(ctx, client, id, modelcard.LoraRequest{Op: modelcard.LoraList})
}

// askLora sends req to worker id's lora endpoint and returns its answer.
func askLora(ctx context.Context, client *runtime.Client, id uint64, req modelcard.LoraRequest) (modelcard.LoraResult, error) {
	rc := runtime.NewContext(ctx, "")
	defer rc.Release()
	payload, _ := json.Marshal(req)
	var res modelcard.LoraResult
	err := client.Call(rc, id, payload, func(item []byte) error { return json.Unmarshal(item, &res) })
	return res, err
}

// loraPolicy narrows an adapter's candidates to its best tier before the
// push router's policy picks (loraStates.tier).
type loraPolicy struct {
	router.Policy
	states *loraStates
	name   string
}

// Unwrap returns the policy it narrows for (the routing span's name).
func (p loraPolicy) Unwrap() router.Policy { return p.Policy }

func (p loraPolicy) Pick(req *backend.Request, candidates []uint64) (uint64, error) {
	return p.Policy.Pick(req, p.states.tier(p.name, candidates))
}

// loraCandidates is the push router as an adapter's KV router sees it:
// the available workers of the adapter's best tier.
type loraCandidates struct {
	kv.Pusher
	states *loraStates
	name   string
}

func (c loraCandidates) Available() []uint64 {
	return c.states.tier(c.name, c.Pusher.Available())
}
