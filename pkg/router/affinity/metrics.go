package affinity

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Routing results of a session's turn (the result label).
const (
	// ResultBound: the turn went to its session's worker.
	ResultBound = "bound"
	// ResultRebound: the session's worker was gone, refusing or full;
	// the turn went where the router picked, and the session follows it.
	ResultRebound = "rebound"
	// ResultNew: the session had no binding (its first turn, or it
	// expired).
	ResultNew = "new"
)

// Metrics count session routing, shared by every model's table and
// stage. A nil *Metrics records nothing.
type Metrics struct {
	routed   *prometheus.CounterVec
	bindings *prometheus.GaugeVec
}

// NewMetrics registers the session-affinity metrics on reg:
// <prefix>_session_affinity_requests_total{model,result} and
// <prefix>_session_affinity_sessions{model}.
func NewMetrics(reg prometheus.Registerer, prefix string) (*Metrics, error) {
	m := &Metrics{
		routed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: prefix + "_session_affinity_requests_total",
			Help: "Requests of a session, by result: bound (went to the session's worker), rebound (that worker was gone, refusing or full), new (no binding yet).",
		}, []string{"model", "result"}),
		bindings: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: prefix + "_session_affinity_sessions",
			Help: "Session bindings held by this frontend, its own and those other frontends shared.",
		}, []string{"model"}),
	}
	for _, c := range []prometheus.Collector{m.routed, m.bindings} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("affinity: register metrics: %w", err)
		}
	}
	return m, nil
}

func (m *Metrics) request(model, result string) {
	if m != nil {
		m.routed.WithLabelValues(model, result).Inc()
	}
}

func (m *Metrics) sessions(model string, n int) {
	if m != nil {
		m.bindings.WithLabelValues(model).Set(float64(n))
	}
}
