package mocker

import (
	"context"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

// minPass is slept (before the speedup ratio) after a pass that had work
// but took no simulated time, so the loop never spins.
const minPass = time.Millisecond

// run is the scheduler loop of one rank: wait for work, run a pass,
// publish its KV events and load, sleep the pass's simulated time divided
// by the speedup ratio, then deliver the pass's tokens (so a token appears
// when the pass that computed it ends). It returns when ctx is done.
func (r *rank) run(ctx context.Context, pub backend.EventPublisher, workerID uint64) {
	for {
		r.mu.Lock()
		if !r.hasWork() {
			events := r.kv.takeEvents()
			load, changed := r.loadMetrics()
			r.mu.Unlock()
			r.publish(ctx, pub, workerID, events, load, changed)
			select {
			case <-r.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		start := time.Now()
		d := r.step()
		if d == 0 {
			d = minPass
		}
		outputs := r.takeOutputs()
		events := r.kv.takeEvents()
		load, changed := r.loadMetrics()
		r.mu.Unlock()

		r.publish(ctx, pub, workerID, events, load, changed)
		t := time.NewTimer(time.Until(start.Add(scale(d, r.cfg.SpeedupRatio))))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		deliver(outputs)
	}
}

// publish sends a pass's KV events, in id order, and its load if it
// changed. Failures are logged and otherwise ignored: the router recovers
// from gaps.
func (r *rank) publish(ctx context.Context, pub backend.EventPublisher, workerID uint64,
	events []kvblock.KVCacheEvent, load kvblock.ForwardPassMetrics, changed bool) {
	if pub == nil {
		return
	}
	for _, ev := range events {
		if err := pub.PublishKVEvent(ctx, r.idx, kvblock.RouterEvent{WorkerID: workerID, Event: ev}); err != nil {
			r.cfg.Logger.Warn("mocker: publish kv event", "rank", r.idx, "event_id", ev.EventID, "err", err)
		}
	}
	if changed {
		if err := pub.PublishLoad(ctx, r.idx, kvblock.LoadEvent{WorkerID: workerID, Data: load}); err != nil {
			r.cfg.Logger.Warn("mocker: publish load", "rank", r.idx, "err", err)
		}
	}
}

// loadMetrics returns the rank's ForwardPassMetrics (§6.7) and whether
// they differ from the last ones returned. The caller holds r.mu.
func (r *rank) loadMetrics() (kvblock.ForwardPassMetrics, bool) {
	dp := uint32(r.idx)
	active := r.kv.activeBlocks()
	m := kvblock.ForwardPassMetrics{
		WorkerStats: kvblock.WorkerStats{
			DataParallelRank:   &dp,
			RequestActiveSlots: uint64(len(r.decode)),
			RequestTotalSlots:  requestTotalSlots,
			NumRequestsWaiting: uint64(len(r.waiting)),
		},
		KVStats: kvblock.KVStats{
			KVActiveBlocks:        uint64(active),
			KVTotalBlocks:         uint64(r.cfg.NumGPUBlocks),
			GPUCacheUsagePerc:     float32(active) / float32(r.cfg.NumGPUBlocks),
			GPUPrefixCacheHitRate: float32(r.hits.mean()),
		},
	}
	last := r.lastLoad
	changed := last.WorkerStats.DataParallelRank == nil || last.KVStats != m.KVStats ||
		last.WorkerStats.RequestActiveSlots != m.WorkerStats.RequestActiveSlots ||
		last.WorkerStats.NumRequestsWaiting != m.WorkerStats.NumRequestsWaiting
	r.lastLoad = m
	return m, changed
}
