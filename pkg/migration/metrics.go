package migration

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Migration types (the migration_type label).
const (
	// TypeNewRequest: the request could not reach its worker.
	TypeNewRequest = "new_request"
	// TypeOngoing: the worker's stream broke mid-answer.
	TypeOngoing = "ongoing_request"
)

// Outcomes of a migration (the outcome label).
const (
	outcomeSuccess   = "success"
	outcomeFailure   = "failure"
	outcomeCancelled = "cancelled"
)

// Metrics are the migration metrics of spec §4.5, shared by every model's
// stage. A nil *Metrics records nothing.
type Metrics struct {
	total       *prometheus.CounterVec
	maxSeqLen   *prometheus.CounterVec
	durationVec *prometheus.HistogramVec
}

// NewMetrics registers the migration metrics on reg, named
// <prefix>_model_migration_total and so on.
func NewMetrics(reg prometheus.Registerer, prefix string) (*Metrics, error) {
	m := &Metrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: prefix + "_model_migration_total",
			Help: "Requests moved to another worker, by kind: new_request (could not reach the worker) or ongoing_request (the stream broke).",
		}, []string{"model", "migration_type"}),
		maxSeqLen: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: prefix + "_model_migration_max_seq_len_exceeded_total",
			Help: "Requests that became unmigratable because their sequence exceeded --migration-max-seq-len.",
		}, []string{"model"}),
		durationVec: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    prefix + "_model_migration_duration_seconds",
			Help:    "Time from a worker's failure to the first token of the new stream (success), or to giving up.",
			Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 60},
		}, []string{"model", "migration_type", "outcome"}),
	}
	for _, c := range []prometheus.Collector{m.total, m.maxSeqLen, m.durationVec} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("migration: register metrics: %w", err)
		}
	}
	return m, nil
}

func (m *Metrics) migration(model, kind string) {
	if m != nil {
		m.total.WithLabelValues(model, kind).Inc()
	}
}

func (m *Metrics) maxSeqLenExceeded(model string) {
	if m != nil {
		m.maxSeqLen.WithLabelValues(model).Inc()
	}
}

func (m *Metrics) migrationDone(model, kind, outcome string, d time.Duration) {
	if m != nil {
		m.durationVec.WithLabelValues(model, kind, outcome).Observe(d.Seconds())
	}
}
