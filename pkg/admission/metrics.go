package admission

import (
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the admission queue's metrics, shared by every model's
// stage. A nil *Metrics records nothing.
type Metrics struct {
	pending   *prometheus.GaugeVec
	saturated *saturatedWorkers
	wait      *prometheus.HistogramVec
	refused   *prometheus.CounterVec
	requeued  *prometheus.CounterVec
}

// NewMetrics registers the admission metrics on reg, named
// <prefix>_router_queue_pending_requests and so on.
func NewMetrics(reg prometheus.Registerer, prefix string) (*Metrics, error) {
	m := &Metrics{
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: prefix + "_router_queue_pending_requests",
			Help: "Requests waiting in the model's admission queue for a worker with room.",
		}, []string{"model"}),
		saturated: &saturatedWorkers{
			desc: prometheus.NewDesc(prefix+"_router_saturated_workers",
				"The model's available workers that are saturated: as many requests in flight from this frontend as their capacity (max_num_seqs), more prefill tokens in flight than --router-queue-threshold times max_num_batched_tokens, full by their published load, busy by the KV router's thresholds, or refusing requests.",
				[]string{"model"}, nil),
			of: map[string]func() int{},
		},
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    prefix + "_router_queue_wait_seconds",
			Help:    "Time the requests admitted from the queue waited in it.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60},
		}, []string{"model"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: prefix + "_router_queue_rejected_total",
			Help: "Requests refused because the model's workers were saturated, by reason: queue_full (the queue was full on arrival), queue_timeout (waited --router-queue-timeout), worker_full, ack_timeout or workers_busy (a worker refused it and it could not wait for another), tenant_limit (its tenant had --tenant-max-inflight requests in flight).",
		}, []string{"model", "reason"}),
		requeued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: prefix + "_router_queue_requeued_total",
			Help: "Requests a worker refused before they started that went back to the queue for another worker, by reason: worker_full (the worker's own queue was full), ack_timeout (the worker was alive but did not accept it in time), workers_busy (the KV router found every worker busy).",
		}, []string{"model", "reason"}),
	}
	for _, c := range []prometheus.Collector{m.pending, m.saturated, m.wait, m.refused, m.requeued} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("admission: register metrics: %w", err)
		}
	}
	return m, nil
}

// pendingGauge returns the model's queue-length gauge (nil for a nil m).
func (m *Metrics) pendingGauge(model string) prometheus.Gauge {
	if m == nil {
		return nil
	}
	return m.pending.WithLabelValues(model)
}

// countSaturated makes count the source of the model's saturated-workers
// gauge, read when the metrics are collected: the count needs every
// worker's load, too much to work out at each admission and release.
func (m *Metrics) countSaturated(model string, count func() int) {
	if m != nil {
		m.saturated.set(model, count)
	}
}

func (m *Metrics) waited(model string, d time.Duration) {
	if m != nil {
		m.wait.WithLabelValues(model).Observe(d.Seconds())
	}
}

func (m *Metrics) refusal(model, reason string) {
	if m != nil {
		m.refused.WithLabelValues(model, reason).Inc()
	}
}

func (m *Metrics) requeue(model, reason string) {
	if m != nil {
		m.requeued.WithLabelValues(model, reason).Inc()
	}
}

// Remove drops the series of a model that is no longer served.
func (m *Metrics) Remove(model string) {
	if m != nil {
		m.pending.DeleteLabelValues(model)
		m.saturated.set(model, nil)
		m.wait.DeleteLabelValues(model)
		m.refused.DeletePartialMatch(prometheus.Labels{"model": model})
		m.requeued.DeletePartialMatch(prometheus.Labels{"model": model})
	}
}

// saturatedWorkers is the saturated-workers gauge of every model, each
// counted by its stage when collected.
type saturatedWorkers struct {
	desc *prometheus.Desc
	mu   sync.Mutex
	of   map[string]func() int
}

// set makes count the model's source; nil drops the model's series.
func (g *saturatedWorkers) set(model string, count func() int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if count == nil {
		delete(g.of, model)
		return
	}
	g.of[model] = count
}

func (g *saturatedWorkers) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *saturatedWorkers) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	counts := make(map[string]func() int, len(g.of))
	maps.Copy(counts, g.of)
	g.mu.Unlock()
	for model, count := range counts {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(count()), model)
	}
}
