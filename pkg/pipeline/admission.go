package pipeline

import (
	"time"

	"github.com/dynamo-go/dynamo/pkg/admission"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/router"
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
	// Policy orders the queue: admission.PolicyFCFS (--router-queue-policy).
	Policy string
	// WorkerLimit is a worker's capacity when its card has no
	// max_num_seqs; 0 is unlimited (--router-queue-worker-limit).
	WorkerLimit int
}

// admit puts the model's admission stage in front of next, when the
// registry has a queue configured. A worker's capacity is the card's
// max_num_seqs times its data-parallel size; with router mode kv, the KV
// router's busy thresholds saturate workers too.
func (r *Registry) admit(card *modelcard.Card, m *Model, next backend.Generator) backend.Generator {
	q := r.cfg.Queue
	if q == nil {
		return next
	}
	rc := card.RuntimeConfig
	cfg := admission.Config{
		Model: card.DisplayName, QueueMax: q.Max, QueueTimeout: q.Timeout, Policy: q.Policy, WorkerLimit: q.WorkerLimit,
		Capacity: max(0, rc.MaxNumSeqs) * max(1, rc.DataParallelSize), Metrics: r.admMet, Logger: r.log,
	}
	if m.kv != nil {
		cfg.Busy = m.kv
	}
	m.admit = admission.New(next, m.workers, cfg)
	return m.admit
}

// spread makes p pick among the workers the admission stage finds not
// saturated, while there are some: round-robin and random then send the
// admitted requests where there is room. (The KV router weighs load
// itself.)
func spread(p router.Policy, m *Model) router.Policy { return spreadPolicy{p, m} }

type spreadPolicy struct {
	router.Policy
	m *Model // its admit is set before the model serves a request
}

// Unwrap returns the policy p spreads for (its name is the routing span's
// router.policy).
func (p spreadPolicy) Unwrap() router.Policy { return p.Policy }

func (p spreadPolicy) Pick(req *backend.Request, candidates []uint64) (uint64, error) {
	if a := p.m.admit; a != nil {
		candidates = a.Unsaturated(candidates)
	}
	return p.Policy.Pick(req, candidates)
}
