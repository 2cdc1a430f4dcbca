package prefill

import "github.com/prometheus/client_golang/prometheus"

// DecisionsCounter exposes the decisions counter to the tests.
func DecisionsCounter(m *Metrics) *prometheus.CounterVec { return m.decisions }
