package kv

import (
	"errors"
	"fmt"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/prometheus/client_golang/prometheus"
)

// Status label values of the events-applied counter (spec §3.1).
const (
	statusOK                  = "ok"
	statusParentBlockNotFound = "parent_block_not_found"
	statusBlockNotFound       = "block_not_found"
	statusInvalidBlock        = "invalid_block"
)

// indexerMetrics are the indexer's Prometheus metrics (indexer and
// approxIndexer). A nil *indexerMetrics is valid and records nothing. Safe
// for concurrent use.
type indexerMetrics struct {
	// counters[kind][status], resolved once so Apply does no label lookups.
	counters map[string]map[string]prometheus.Counter
	size     prometheus.Gauge
}

// newIndexerMetrics builds the indexer metrics and registers them on reg.
// prefix starts the names ("" means "dynamo"):
//
//	{prefix}_kv_cache_events_applied  counter, labels event_type (stored, removed, cleared)
//	                                  and status (ok, parent_block_not_found, block_not_found, invalid_block)
//	{prefix}_kv_indexer_blocks        gauge, blocks cached over all workers (indexer.Size)
//
// Several indexers (one per model, say) may share one indexerMetrics: the
// counters and the gauge then sum over them.
//
// It fails if reg is nil or registration fails (for example because the
// names are taken).
func newIndexerMetrics(reg prometheus.Registerer, prefix string) (*indexerMetrics, error) {
	if reg == nil {
		return nil, fmt.Errorf("kv: NewIndexerMetrics: nil prometheus.Registerer")
	}
	if prefix == "" {
		prefix = "dynamo"
	}
	applied := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: prefix + "_kv_cache_events_applied",
		Help: "KV cache events applied to the router's indexer, by event type and outcome.",
	}, []string{"event_type", "status"})
	size := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: prefix + "_kv_indexer_blocks",
		Help: "Blocks cached over all workers as known to the router's indexer.",
	})
	for _, c := range []prometheus.Collector{applied, size} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("kv: indexer metrics: %w", err)
		}
	}
	m := &indexerMetrics{counters: map[string]map[string]prometheus.Counter{}, size: size}
	for _, kind := range []string{kvblock.KindStored, kvblock.KindRemoved, kvblock.KindCleared} {
		m.counters[kind] = map[string]prometheus.Counter{}
		for _, st := range []string{statusOK, statusParentBlockNotFound, statusBlockNotFound, statusInvalidBlock} {
			m.counters[kind][st] = applied.WithLabelValues(kind, st)
		}
	}
	return m, nil
}

// applied counts one applied event of kind with outcome err.
func (m *indexerMetrics) applied(kind string, err error) {
	if m == nil {
		return
	}
	st := statusOK
	switch {
	case err == nil:
	case errors.Is(err, errParentBlockNotFound):
		st = statusParentBlockNotFound
	case errors.Is(err, errBlockNotFound):
		st = statusBlockNotFound
	case errors.Is(err, errInvalidBlockSequence):
		st = statusInvalidBlock
	default:
		return
	}
	m.counters[kind][st].Inc()
}

// addSize moves the size gauge by delta blocks.
func (m *indexerMetrics) addSize(delta int64) {
	if m == nil || delta == 0 {
		return
	}
	m.size.Add(float64(delta))
}
