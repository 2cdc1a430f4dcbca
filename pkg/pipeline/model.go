package pipeline

import (
	"context"
	"errors"

	"github.com/dynamo-go/dynamo/pkg/admission"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/prefill"
	"github.com/dynamo-go/dynamo/pkg/preprocessor"
	"github.com/dynamo-go/dynamo/pkg/router"
	"github.com/dynamo-go/dynamo/pkg/router/affinity"
	"github.com/dynamo-go/dynamo/pkg/router/kv"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// ErrNotKVRouted is returned by what only KV-aware routing can answer
// (Model.Decide, the busy thresholds) for a model routed otherwise.
var ErrNotKVRouted = errors.New("pipeline: the model is not routed by KV cache (--router-mode kv)")

// BusyThresholds are a KV-routed model's busy thresholds (see
// kv.BusyThresholds).
type BusyThresholds = kv.BusyThresholds

// Model is one served model: its card, its preprocessor, and the chain of
// stages that serves its requests,
//
//	[admission] -> migration -> prefill stage -> [session affinity] -> [KV router] -> push router -> the card's endpoint
//
// built when the model's first worker appears (the prefill stage prefills
// on the model's prefill workers, while it has some). A Model is a
// backend.Generator: the head of that chain. It is safe for concurrent
// use.
type Model struct {
	name    string
	card    *modelcard.Card
	pre     *preprocessor.Model
	head    backend.Generator // the admission stage, or the migration stage without one
	workers *modelInstances
	kv      *kv.Router       // nil unless RouterKV
	prefill *prefill.Stage   // active while the model has prefill workers
	admit   *admission.Stage // nil without Config.Queue
	push    *router.PushRouter
	// sessions are the model's session bindings; nil unless
	// Config.SessionAffinityTTL.
	sessions *affinity.Table
	ep       runtime.EndpointID
	// load keeps the workers' published load in router modes other than
	// kv (whose router keeps it), when there is an event plane; nil
	// otherwise.
	load        *kv.LoadMonitor
	seqsPerRank uint64 // the card's max_num_seqs: a rank holding as many requests is full

	keys  map[string]bool // the card keys that keep it alive; guarded by Registry.mu
	files []string        // checksums of the card's files, held in the cache

	// stop ends the model's goroutines (the KV router's Run); done is
	// closed when they have returned.
	stop context.CancelFunc
	done chan struct{}
}

var _ backend.Generator = (*Model)(nil)

// Name returns the model's canonical served name.
func (m *Model) Name() string { return m.name }

// Card returns the model card the model was built from.
func (m *Model) Card() *modelcard.Card { return m.card }

// Serves reports whether the model serves requests of type t (chat,
// completions, embedding).
func (m *Model) Serves(t modelcard.ModelType) bool { return m.card.ModelType.Has(t) }

// Generate sends req through the model's chain and streams the outputs
// back, each with the Placement of the worker that produced it.
func (m *Model) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	return m.head.Generate(ctx, req, emit)
}

// Ready reports whether a worker can take the model's requests now: a
// card alone is not enough, its instance must be registered too.
func (m *Model) Ready() bool { return len(m.workers.Available()) > 0 }

// Instances returns the discovered worker instances that serve the model.
func (m *Model) Instances() []runtime.Instance { return m.workers.Instances() }

// Decide answers where req would be routed, without generating or
// recording load (the query_instance_id annotation). It needs KV routing,
// whose choice depends on the prompt: otherwise ErrNotKVRouted.
//
// For a disaggregated model the placement also names the prefill worker
// the request would be prefilled on.
func (m *Model) Decide(req *backend.Request) (*backend.Placement, error) {
	if m.kv == nil {
		return nil, ErrNotKVRouted
	}
	p, err := m.kv.Decide(req)
	if err != nil {
		return nil, err
	}
	if pre, ok := m.prefill.PickPrefill(req); ok {
		c := *p
		c.PrefillWorkerID, c.PrefillDPRank = &pre.WorkerID, pre.DPRank
		p = &c
	}
	return p, nil
}

// Disaggregated reports whether the model's requests are prefilled on its
// prefill workers now: it has some, and one is available.
func (m *Model) Disaggregated() bool { return m.prefill.Active() }

// KVRouting returns the model's KV routing mode, kv.ModeEvents or
// kv.ModeApproximate, and whether approximate mode is a fallback (KV
// events were wanted but the event plane is missing); ok is false for a
// model routed otherwise.
func (m *Model) KVRouting() (mode string, fallback, ok bool) {
	if m.kv == nil {
		return "", false, false
	}
	mode, fallback = m.kv.Mode()
	return mode, fallback, true
}

// BusyThresholds returns a KV-routed model's busy thresholds in force.
func (m *Model) BusyThresholds() (BusyThresholds, error) {
	if m.kv == nil {
		return BusyThresholds{}, ErrNotKVRouted
	}
	return m.kv.Thresholds(), nil
}

// UpdateBusyThresholds changes the thresholds u sets, keeps the others,
// and returns the thresholds now in force.
func (m *Model) UpdateBusyThresholds(u BusyThresholds) (BusyThresholds, error) {
	if m.kv == nil {
		return BusyThresholds{}, ErrNotKVRouted
	}
	return m.kv.UpdateThresholds(u)
}

// addWorker and removeWorker keep the chain's view of the workers in step
// with discovery. A joining worker becomes a candidate once the KV router
// knows its cache.
func (m *Model) addWorker(ctx context.Context, id uint64) {
	if m.kv != nil {
		m.kv.AddWorker(ctx, id)
	}
	if m.load != nil {
		rc := m.card.RuntimeConfig
		m.load.SetCapacity(id, kv.WorkerCapacity{DataParallelSize: uint32(max(1, rc.DataParallelSize))})
	}
	m.workers.add(id)
}

func (m *Model) removeWorker(id uint64) {
	m.workers.remove(id)
	if m.kv != nil {
		m.kv.RemoveWorker(id)
	}
	if m.load != nil && !m.workers.serves(id) {
		m.load.RemoveWorker(id)
	}
}

// close ends the model's goroutines and waits for them.
func (m *Model) close() {
	m.stop()
	<-m.done
}
