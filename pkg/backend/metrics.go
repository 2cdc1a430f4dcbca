package backend

import "github.com/prometheus/client_golang/prometheus"

// MetricsContext is what an engine gets to register its own metrics.
type MetricsContext struct {
	// Model is the served model name, for a "model" label.
	Model string
	// Namespace, Component and Endpoint name the served endpoint.
	Namespace, Component, Endpoint string
	// Registerer is the process's registry (served on /metrics).
	Registerer prometheus.Registerer
}
