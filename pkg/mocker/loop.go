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
			events, tokens, loras := r.kv.takeBatch()
			load, changed := r.loadMetrics()
			r.mu.Unlock()
			r.publish(ctx, pub, workerID, events, tokens, loras, load, changed)
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
		events, tokens, loras := r.kv.takeBatch()
		load, changed := r.loadMetrics()
		r.mu.Unlock()

		r.publish(ctx, pub, workerID, events, tokens, loras, load, changed)
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
// changed. A KVBatchPublisher gets the pass's events as one batch, with
// the token ids of stored blocks and their LoRA adapter (tokens and
// loras, parallel to events). Failures
// are logged and otherwise ignored: the router recovers from gaps.
func (r *rank) publish(ctx context.Context, pub backend.EventPublisher, workerID uint64,
	events []kvblock.KVCacheEvent, tokens [][]uint32, loras []string, load kvblock.ForwardPassMetrics, changed bool) {
	if pub == nil {
		return
	}
	if bp, ok := pub.(KVBatchPublisher); ok {
		if len(events) > 0 {
			batch := make([]KVEvent, len(events))
			for i, ev := range events {
				batch[i] = KVEvent{RouterEvent: kvblock.RouterEvent{WorkerID: workerID, Event: ev}}
				if i < len(tokens) {
					batch[i].Tokens = tokens[i]
				}
				if i < len(loras) {
					batch[i].LoraName = loras[i]
				}
			}
			if err := bp.PublishKVBatch(ctx, r.idx, batch); err != nil {
				r.cfg.Logger.Warn("mocker: publish kv batch", "rank", r.idx, "events", len(batch), "err", err)
			}
		}
		events = nil
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

// KVEvent is one KV-cache event of a rank with the token ids of the
// blocks it stores.
type KVEvent struct {
	kvblock.RouterEvent
	// Tokens are the token ids of a stored event's blocks, in order,
	// Config.BlockSize per block; nil for removed and cleared events.
	Tokens []uint32
	// LoraName is the LoRA adapter of a stored event's blocks ("" for the
	// base model; vLLM's lora_name): their TokensHash are salted with
	// kvblock.SaltedSeed(LoraName, ""), as a subscriber hashing Tokens
	// must do too.
	LoraName string
}

// KVBatchPublisher is an EventPublisher that takes a rank's KV events one
// scheduler pass at a time, with the stored blocks' token ids (what
// vLLM's KV event batches carry, one batch per engine step). When the
// engine's publisher implements it, PublishKVBatch is called once per
// pass that changed the cache, instead of PublishKVEvent per event;
// PublishLoad is called as usual. events is not used by the engine after
// the call.
type KVBatchPublisher interface {
	backend.EventPublisher
	PublishKVBatch(ctx context.Context, dpRank int, events []KVEvent) error
}
