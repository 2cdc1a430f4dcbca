package runtime

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DiscoveryStatus is the process's link to discovery (etcd), as /health
// and the discovery metrics report it. An outage does not make a process
// unhealthy: it keeps serving with the instances it knows.
type DiscoveryStatus struct {
	// Status is "connected" or "unreachable".
	Status string `json:"status"`
	// Since is when the current status began.
	Since time.Time `json:"since"`
	// Outages counts the outages since the process started.
	Outages uint64 `json:"outages"`
}

// Discovery statuses.
const (
	DiscoveryConnected   = "connected"
	DiscoveryUnreachable = "unreachable"
)

// DiscoveryStatus reports whether discovery is reachable now.
func (rt *DistributedRuntime) DiscoveryStatus() DiscoveryStatus {
	c := rt.store.Connectivity()
	s := DiscoveryStatus{Status: DiscoveryConnected, Since: c.Since, Outages: c.Outages}
	if !c.Connected {
		s.Status = DiscoveryUnreachable
	}
	return s
}

// registerDiscoveryMetrics exposes the link to discovery on reg.
func (rt *DistributedRuntime) registerDiscoveryMetrics(reg prometheus.Registerer) error {
	connected := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "dynamo_discovery_connected",
		Help: "1 while discovery (etcd) is reachable, 0 during an outage (the process keeps serving with what it knows).",
	}, func() float64 {
		if rt.store.Connectivity().Connected {
			return 1
		}
		return 0
	})
	outages := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "dynamo_discovery_outages_total",
		Help: "Times discovery (etcd) became unreachable.",
	}, func() float64 { return float64(rt.store.Connectivity().Outages) })
	for _, c := range []prometheus.Collector{connected, outages} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
