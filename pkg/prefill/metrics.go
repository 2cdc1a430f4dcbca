package prefill

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Decisions of the prefill stage (the decision label).
const (
	// DecisionRemote: a prefill worker prefilled, the decode workers
	// decoded.
	DecisionRemote = "remote"
	// DecisionLocal: the conditional policy kept a short or mostly cached
	// prompt on the decode worker.
	DecisionLocal = "local"
	// DecisionFallback: the model had prefill workers but none was
	// available, or the prefill failed; the decode worker prefilled.
	DecisionFallback = "fallback"
	// DecisionRefused: no prefill, and disaggregation is enforced; the
	// request failed.
	DecisionRefused = "refused"
)

// Metrics count the prefill stage's decisions, shared by every model's
// stage. A nil *Metrics records nothing.
type Metrics struct {
	decisions *prometheus.CounterVec
}

// NewMetrics registers the prefill metrics on reg, named
// <prefix>_prefill_decisions_total.
func NewMetrics(reg prometheus.Registerer, prefix string) (*Metrics, error) {
	m := &Metrics{decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: prefix + "_prefill_decisions_total",
		Help: "Where the prompts of a disaggregated model's requests were prefilled: remote (a prefill worker), local (the conditional policy kept it on the decode worker), fallback (no prefill worker available, or the prefill failed), refused (enforced disaggregation without a prefill).",
	}, []string{"model", "decision"})}
	if err := reg.Register(m.decisions); err != nil {
		return nil, fmt.Errorf("prefill: register metrics: %w", err)
	}
	return m, nil
}

func (m *Metrics) decision(model, d string) {
	if m != nil {
		m.decisions.WithLabelValues(model, d).Inc()
	}
}
