package pipeline

import (
	"context"
	"time"

	"github.com/dynamo-go/dynamo/pkg/admission"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/router"
	"github.com/dynamo-go/dynamo/pkg/router/kv"
)

// QueueConfig configures the admission queue in front of every model's
// routing (package admission).
type QueueConfig struct {
	// Max is the most requests that may wait per model; 0 refuses at once
	// when the model's workers are saturated (--router-queue-max).
	Max int
	// Timeout is the longest wait (0: admission.DefaultQueueTimeout;
	// --router-queue-timeout).
	Timeout time.Duration
	// Policy orders the queue: admission.PolicyFCFS, PolicyLCFS or
	// PolicyWSPT (--router-queue-policy).
	Policy string
	// WorkerLimit is a worker's capacity when its card has no
	// max_num_seqs; 0 is unlimited (--router-queue-worker-limit).
	WorkerLimit int
	// Threshold, when set, saturates a worker whose prompt tokens in
	// flight from this frontend, not yet prefilled, exceed Threshold times
	// its max_num_batched_tokens (kv.DefaultMaxNumBatchedTokens when its
	// card does not say) times its data-parallel size
	// (--router-queue-threshold, spec §4.6); nil turns the token rule off.
	Threshold *float64
}

// admission builds the model's admission stage, when the registry has a
// queue configured (nil otherwise), before the routers it gates: they are
// handed it (spread, gatedCandidates, their load-change callbacks), and
// the chain is put behind it last (Before). A worker is saturated
// (admission.Stage) by this frontend's requests in flight to it against
// the card's max_num_seqs times its data-parallel size, by their prompt
// tokens not yet prefilled against the token budget
// (QueueConfig.Threshold), by its published load (full, or busy by the KV
// router's thresholds in router mode kv), or for a moment after it
// refused a request. Its loads come from m (Loads), read per request.
func (r *Registry) admission(card *modelcard.Card, m *Model) *admission.Stage {
	q := r.cfg.Queue
	if q == nil {
		return nil
	}
	rc := card.RuntimeConfig
	dp := max(1, rc.DataParallelSize)
	cfg := admission.Config{
		Model: card.DisplayName, QueueMax: q.Max, QueueTimeout: q.Timeout, Policy: q.Policy, WorkerLimit: q.WorkerLimit,
		Capacity: max(0, rc.MaxNumSeqs) * dp, Metrics: r.admMet, Logger: r.log,
	}
	if q.Threshold != nil {
		batched := kv.DefaultMaxNumBatchedTokens
		if rc.MaxNumBatchedTokens > 0 {
			batched = rc.MaxNumBatchedTokens
		}
		cfg.TokenBudget = max(1, int(*q.Threshold*float64(batched)*float64(dp)))
	}
	return admission.New(m, cfg)
}

// kick returns adm's Kick (nil without admission): what a router calls
// when its loads change, so that waiting requests look again.
func kick(adm *admission.Stage) func() {
	if adm == nil {
		return nil
	}
	return adm.Kick
}

// Loads is the model's workers as its admission stage weighs them: the
// push router's requests and prefill tokens in flight per available
// worker, and whether its published load (or a refusal a moment ago)
// makes it busy.
func (m *Model) Loads() ([]admission.WorkerLoad, int) {
	ids := m.workers.Available()
	loads, routed := m.push.Loads(ids)
	mon := m.monitor()
	out := make([]admission.WorkerLoad, len(ids))
	for i, id := range ids {
		l := loads[i]
		out[i] = admission.WorkerLoad{ID: id, Requests: l.Requests, PrefillTokens: l.PrefillTokens,
			Busy: l.Refusing || mon.Saturated(id, m.seqsPerRank)}
	}
	return out, routed
}

// monitor is where the model's workers' published load is kept: the KV
// router's, or the model's own in the other router modes (nil without an
// event plane).
func (m *Model) monitor() *kv.LoadMonitor {
	if m.kv != nil {
		return m.kv.Monitor()
	}
	return m.load
}

// CountRefusal counts a refusal of one of the model's requests made
// before its chain (the frontend's per-tenant limit) under reason
// (admission.ReasonTenantLimit), and returns how long the client should
// wait before it retries: the admission queue's estimate, 0 without one.
func (m *Model) CountRefusal(reason string) time.Duration {
	if m.admit == nil {
		return 0
	}
	m.admit.Refused(reason)
	return m.admit.RetryAfter()
}

// followLoad keeps the model's own load monitor (router modes other than
// kv, which has one) fed with the load events its workers publish on the
// event plane, until ctx ends. Without an event plane there is nothing to
// hear.
func (r *Registry) followLoad(ctx context.Context, m *Model) error {
	if m.load == nil {
		return nil
	}
	return r.rt.Subscribe(ctx, kvblock.LoadMetricsSubject(m.ep.Namespace), func(b []byte) {
		var ev kvblock.LoadEvent
		if kvblock.Unmarshal(b, &ev) == nil && m.workers.serves(ev.WorkerID) {
			m.load.ObserveLoadEvent(ev)
			if m.admit != nil {
				m.admit.Kick() // a worker that was full may have room now
			}
		}
	})
}

// spread makes p pick among the workers adm finds not saturated, while
// there are some: round-robin and random then send the admitted requests
// where there is room. Without admission p picks alone.
func spread(p router.Policy, adm *admission.Stage) router.Policy {
	if adm == nil {
		return p
	}
	return spreadPolicy{p, adm}
}

type spreadPolicy struct {
	router.Policy
	adm *admission.Stage
}

// Unwrap returns the policy p spreads for (its name is the routing span's
// router.policy).
func (p spreadPolicy) Unwrap() router.Policy { return p.Policy }

func (p spreadPolicy) Pick(req *backend.Request, candidates []uint64) (uint64, error) {
	return p.Policy.Pick(req, p.adm.Unsaturated(candidates))
}

// gatedCandidates returns the push router as the KV router sees it: its
// available workers are those adm finds not saturated, while there are
// some, so that the KV router never sends an admitted request to a worker
// admission counts as full. Without admission it is the push router.
func gatedCandidates(push *router.PushRouter, adm *admission.Stage) kv.Pusher {
	if adm == nil {
		return push
	}
	return kvCandidates{push, adm}
}

type kvCandidates struct {
	*router.PushRouter
	adm *admission.Stage
}

// Available returns the push router's available workers that are not
// saturated, or all of them when all are.
func (k kvCandidates) Available() []uint64 {
	return k.adm.Unsaturated(k.PushRouter.Available())
}
