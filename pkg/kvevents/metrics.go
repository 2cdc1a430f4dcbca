package kvevents

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Reasons a message or an event is skipped (the reason label).
const (
	reasonFrames    = "frames"     // not [topic, 8-byte seq, payload]
	reasonDecode    = "decode"     // the payload is not a KVEventBatch
	reasonEvent     = "event"      // an event with an unknown tag or unreadable fields
	reasonBlockSize = "block_size" // token_ids do not cut into the configured block size
	reasonMedium    = "medium"     // an event of another tier than the GPU
	reasonDuplicate = "duplicate"  // a batch already applied (a replay overlapping the live stream)
)

// Outcomes of a sequence gap (the outcome label).
const (
	gapReplayed    = "replayed"
	gapUnrecovered = "unrecovered"
)

// Metrics are the subscriber's metrics. A nil *Metrics records nothing;
// one Metrics may serve several subscribers.
type Metrics struct {
	events     *prometheus.CounterVec
	skipped    *prometheus.CounterVec
	gaps       *prometheus.CounterVec
	reconnects prometheus.Counter
	restarts   prometheus.Counter
}

// NewMetrics registers the KV event subscriber metrics on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dynamo_kvevents_events_total",
			Help: "KV events converted from the engine's ZeroMQ stream and passed on, by event_type: stored, removed, cleared.",
		}, []string{"event_type"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dynamo_kvevents_skipped_total",
			Help: "Engine messages or events skipped, by reason: frames, decode, event, block_size, medium, duplicate.",
		}, []string{"reason"}),
		gaps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dynamo_kvevents_gaps_total",
			Help: "Gaps in the engine's batch sequence numbers, by outcome: replayed (filled from the replay socket) or unrecovered.",
		}, []string{"outcome"}),
		reconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dynamo_kvevents_reconnects_total",
			Help: "Times the connection to the engine's event publisher was lost and dialled again.",
		}),
		restarts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dynamo_kvevents_publisher_restarts_total",
			Help: "Times the engine's sequence numbers went back (a restarted engine): every known dp rank was cleared.",
		}),
	}
	for _, c := range []prometheus.Collector{m.events, m.skipped, m.gaps, m.reconnects, m.restarts} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("kvevents: register metrics: %w", err)
		}
	}
	return m, nil
}

func (m *Metrics) event(kind string) {
	if m != nil {
		m.events.WithLabelValues(kind).Inc()
	}
}

func (m *Metrics) skip(reason string) {
	if m != nil {
		m.skipped.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) gap(outcome string) {
	if m != nil {
		m.gaps.WithLabelValues(outcome).Inc()
	}
}

func (m *Metrics) reconnect() {
	if m != nil {
		m.reconnects.Inc()
	}
}

func (m *Metrics) restart() {
	if m != nil {
		m.restarts.Inc()
	}
}
