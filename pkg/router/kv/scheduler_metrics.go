package kv

import (
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// overhead is the time one routing decision spent in each phase.
type overhead struct {
	// BlockHashing is the time computing the prompt's block hashes.
	BlockHashing time.Duration
	// FindMatches is the time in the indexer's find_matches.
	FindMatches time.Duration
	// SeqHashing is the time computing the tracking (sequence) hashes.
	SeqHashing time.Duration
	// Scheduling is the time in worker selection.
	Scheduling time.Duration
	// Total is the whole routing decision.
	Total time.Duration
}

// routerMetrics are the KV router's Prometheus metrics (spec §4.9). A nil
// *routerMetrics is valid and records nothing. Safe for concurrent use.
type routerMetrics struct {
	blockHashing, findMatches, seqHashing, scheduling, total prometheus.Histogram

	kvHitRate     prometheus.Histogram
	overlapBlocks prometheus.Histogram

	activeDecodeBlocks  *prometheus.GaugeVec
	activePrefillTokens *prometheus.GaugeVec
}

// newRouterMetrics builds the router metrics and registers them on reg.
// prefix is the namespace the reference names start with ("" means
// "dynamo"); with it the metrics are
//
//	{prefix}_router_overhead_{block_hashing,indexer_find_matches,seq_hashing,scheduling,total}_ms
//	{prefix}_component_router_kv_hit_rate         overlap/required blocks of each decision
//	{prefix}_router_predicted_overlap_blocks      overlap blocks of each decision
//	{prefix}_frontend_worker_active_decode_blocks  gauge, labels worker_id, dp_rank, worker_type
//	{prefix}_frontend_worker_active_prefill_tokens gauge, same labels
//
// The reference labels the overhead histograms with router_id: wrap reg
// with prometheus.WrapRegistererWith(prometheus.Labels{"router_id": id},
// reg) to get it. It fails if reg is nil or registration fails (for
// example because the names are taken).
func newRouterMetrics(reg prometheus.Registerer, prefix string) (*routerMetrics, error) {
	if reg == nil {
		return nil, fmt.Errorf("kv: NewRouterMetrics: nil prometheus.Registerer")
	}
	if prefix == "" {
		prefix = "dynamo"
	}
	overheadBuckets := prometheus.ExponentialBuckets(0.001, 2, 20) // 1 µs .. ~524 ms
	overhead := func(phase, help string) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    prefix + "_router_overhead_" + phase + "_ms",
			Help:    help,
			Buckets: overheadBuckets,
		})
	}
	workerGauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: prefix + "_frontend_worker_" + name, Help: help},
			[]string{"worker_id", "dp_rank", "worker_type"})
	}
	m := &routerMetrics{
		blockHashing: overhead("block_hashing", "Time spent computing block hashes in milliseconds."),
		findMatches:  overhead("indexer_find_matches", "Time spent in indexer find_matches in milliseconds."),
		seqHashing:   overhead("seq_hashing", "Time spent computing sequence hashes in milliseconds."),
		scheduling:   overhead("scheduling", "Time spent in scheduler worker selection in milliseconds."),
		total:        overhead("total", "Total routing overhead per request in milliseconds."),
		kvHitRate: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    prefix + "_component_router_kv_hit_rate",
			Help:    "Predicted KV cache hit rate at routing time (0.0-1.0).",
			Buckets: prometheus.LinearBuckets(0, 0.05, 21),
		}),
		overlapBlocks: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    prefix + "_router_predicted_overlap_blocks",
			Help:    "Cached prefix blocks of the chosen worker at routing time.",
			Buckets: append([]float64{0}, prometheus.ExponentialBuckets(1, 2, 16)...),
		}),
		activeDecodeBlocks:  workerGauge("active_decode_blocks", "Active KV blocks of a worker as tracked by the router."),
		activePrefillTokens: workerGauge("active_prefill_tokens", "Routed prompt tokens of a worker whose prefill has not completed."),
	}
	for _, c := range []prometheus.Collector{
		m.blockHashing, m.findMatches, m.seqHashing, m.scheduling, m.total,
		m.kvHitRate, m.overlapBlocks, m.activeDecodeBlocks, m.activePrefillTokens,
	} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("kv: router metrics: %w", err)
		}
	}
	return m, nil
}

// ObserveOverhead records the phase times of one routing decision, in
// milliseconds.
func (m *routerMetrics) ObserveOverhead(o overhead) {
	if m == nil {
		return
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	m.blockHashing.Observe(ms(o.BlockHashing))
	m.findMatches.Observe(ms(o.FindMatches))
	m.seqHashing.Observe(ms(o.SeqHashing))
	m.scheduling.Observe(ms(o.Scheduling))
	m.total.Observe(ms(o.Total))
}

// ObserveSelection records the predicted overlap of one decision: the
// overlap blocks, and overlap/required blocks as the hit rate (skipped
// when no block is required).
func (m *routerMetrics) ObserveSelection(sel selection) {
	if m == nil {
		return
	}
	m.overlapBlocks.Observe(float64(sel.OverlapBlocks))
	if sel.RequiredBlocks > 0 {
		m.kvHitRate.Observe(min(1, float64(sel.OverlapBlocks)/float64(sel.RequiredBlocks)))
	}
}

// SetActiveLoad sets the worker gauges from l; workerType is "prefill" or
// "decode". Nil fields of l leave their gauge unchanged.
func (m *routerMetrics) SetActiveLoad(workerType string, l activeLoad) {
	if m == nil {
		return
	}
	id, rank := strconv.FormatUint(l.WorkerID, 10), strconv.FormatUint(uint64(l.DPRank), 10)
	if l.ActiveDecodeBlocks != nil {
		m.activeDecodeBlocks.WithLabelValues(id, rank, workerType).Set(float64(*l.ActiveDecodeBlocks))
	}
	if l.ActivePrefillTokens != nil {
		m.activePrefillTokens.WithLabelValues(id, rank, workerType).Set(float64(*l.ActivePrefillTokens))
	}
}

// DeleteWorker drops the gauges of every dp rank of a worker that left.
func (m *routerMetrics) DeleteWorker(workerID uint64) {
	if m == nil {
		return
	}
	l := prometheus.Labels{"worker_id": strconv.FormatUint(workerID, 10)}
	m.activeDecodeBlocks.DeletePartialMatch(l)
	m.activePrefillTokens.DeletePartialMatch(l)
}
