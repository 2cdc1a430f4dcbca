package pipeline

import (
	"context"
	"slices"
	"time"

	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// Delays between rounds of attempts to load a model's files.
const (
	loadRetryMin = 200 * time.Millisecond
	loadRetryMax = 30 * time.Second
)

// pendingModel is a model whose first worker has appeared and whose files
// are being fetched. It is not served (nor listed) until they are loaded.
type pendingModel struct {
	card   *modelcard.Card // owned by the loader until install
	ep     runtime.EndpointID
	start  time.Time
	cancel context.CancelFunc

	recs map[string]*modelcard.Record // card key -> record; guarded by Registry.mu
}

// load fetches the pending model's files from its workers, retrying with
// backoff until they are loaded (then it hands the model to Run through
// r.loaded) or its context ends (its last worker left, or Run returned).
func (r *Registry) load(ctx context.Context, p *pendingModel) {
	defer r.loaders.Done()
	delay := loadRetryMin
	for attempt := 1; ; attempt++ {
		workers := r.pendingWorkers(p, attempt)
		err := p.card.Load(ctx, func(ctx context.Context, f *modelcard.File) ([]byte, error) {
			return r.files.fetch(ctx, p.ep, workers, f)
		})
		if err == nil {
			select {
			case r.loaded <- p:
			case <-ctx.Done():
			}
			return
		}
		if ctx.Err() != nil {
			return
		}
		r.log.Error("pipeline: cannot load the model's files from any of its workers; the model is not served yet", "model", p.card.DisplayName,
			"workers", len(workers), "attempt", attempt, "retry_in", delay, "err", err)
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return
		}
		delay = min(2*delay, loadRetryMax)
	}
}

// pendingWorkers returns the instance ids of the pending model's workers,
// rotated by attempt so that each round starts with another worker.
func (r *Registry) pendingWorkers(p *pendingModel, attempt int) []uint64 {
	r.mu.RLock()
	ids := make([]uint64, 0, len(p.recs))
	for _, rec := range p.recs {
		ids = append(ids, rec.InstanceID)
	}
	r.mu.RUnlock()
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) > 1 {
		k := (attempt - 1) % len(ids)
		ids = append(ids[k:], ids[:k]...)
	}
	return ids
}

// fileSums returns the checksums of the card's files.
func fileSums(c *modelcard.Card) []string {
	var out []string
	for _, f := range c.Files() {
		out = append(out, f.Checksum)
	}
	return out
}
