package pipeline

import (
	"sync"

	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// modelInstances is the push router's view of one model's workers: the
// endpoint's instances that published this model's card. Two models served
// on one endpoint thus never get each other's requests.
type modelInstances struct {
	*runtime.Client

	mu  sync.RWMutex
	ids map[uint64]int // instance id -> number of card keys it holds
}

func newModelInstances(c *runtime.Client) *modelInstances {
	return &modelInstances{Client: c, ids: map[uint64]int{}}
}

func (mi *modelInstances) add(id uint64) {
	mi.mu.Lock()
	mi.ids[id]++
	mi.mu.Unlock()
}

func (mi *modelInstances) remove(id uint64) {
	mi.mu.Lock()
	if mi.ids[id]--; mi.ids[id] <= 0 {
		delete(mi.ids, id)
	}
	mi.mu.Unlock()
}

// Available returns the endpoint's available instances that serve the
// model, sorted. As with runtime.Client.Available, when every instance
// of the model is being skipped after a failure it returns them all, even
// while other models' instances on the endpoint are available.
func (mi *modelInstances) Available() []uint64 {
	if out := mi.filter(mi.Client.Available()); len(out) > 0 {
		return out
	}
	return mi.filter(mi.Client.InstanceIDs())
}

// filter returns the ids of ids that serve the model.
func (mi *modelInstances) filter(ids []uint64) []uint64 {
	mi.mu.RLock()
	defer mi.mu.RUnlock()
	out := ids[:0:0]
	for _, id := range ids {
		if mi.ids[id] > 0 {
			out = append(out, id)
		}
	}
	return out
}

// Instances returns the endpoint's discovered instances that serve the
// model.
func (mi *modelInstances) Instances() []runtime.Instance {
	all := mi.Client.Instances()
	mi.mu.RLock()
	defer mi.mu.RUnlock()
	out := all[:0:0]
	for _, in := range all {
		if mi.ids[in.ID] > 0 {
			out = append(out, in)
		}
	}
	return out
}

// serves reports whether instance id serves the model.
func (mi *modelInstances) serves(id uint64) bool {
	mi.mu.RLock()
	defer mi.mu.RUnlock()
	return mi.ids[id] > 0
}
