package kv

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are a frontend's KV routing metrics, shared by the models it
// routes: the indexers' (dynamo_kvrouter_*), the routers'
// (dynamo_router_*, dynamo_frontend_worker_*) and the mode each model
// routes in (dynamo_frontend_kv_router_mode). A nil *Metrics records
// nothing.
type Metrics struct {
	indexer *indexerMetrics
	router  *routerMetrics
	mode    *prometheus.GaugeVec // model, mode
}

// NewMetrics builds the KV routing metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	im, err := newIndexerMetrics(reg, "dynamo_kvrouter")
	if err != nil {
		return nil, err
	}
	rm, err := newRouterMetrics(reg, "dynamo")
	if err != nil {
		return nil, err
	}
	mode := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dynamo_frontend_kv_router_mode",
		Help: "1 for the KV routing mode a model uses: events (KV events from the workers) or approximate (no events: routing decisions stand in for them).",
	}, []string{"model", "mode"})
	if err := reg.Register(mode); err != nil {
		return nil, fmt.Errorf("kv: registering metrics: %w", err)
	}
	return &Metrics{indexer: im, router: rm, mode: mode}, nil
}

// setMode sets model's mode gauge.
func (m *Metrics) setMode(model, mode string) {
	if m == nil || m.mode == nil {
		return
	}
	m.mode.WithLabelValues(model, mode).Set(1)
}
