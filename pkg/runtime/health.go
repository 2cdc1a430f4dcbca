package runtime

import (
	"sync"
	"time"
)

// health is the process's readiness as the status server reports it: not
// ready until an endpoint is served (unless configured to start ready),
// then ready while every served endpoint is. It also knows the endpoints
// being served, so that Endpoint.SetHealthy finds the one it marks.
type health struct {
	start time.Time

	mu        sync.Mutex
	ready     bool
	endpoints map[string]bool
	served    map[EndpointID]*servedEndpoint
}

func newHealth(startReady bool) *health {
	return &health{start: time.Now(), ready: startReady, endpoints: make(map[string]bool), served: make(map[EndpointID]*servedEndpoint)}
}

// addServed records s as the served instance of its endpoint.
func (h *health) addServed(s *servedEndpoint) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.served[s.id] = s
}

// removeServed forgets s (and only s).
func (h *health) removeServed(s *servedEndpoint) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.served[s.id] == s {
		delete(h.served, s.id)
	}
}

// lookupServed returns the served instance of id, or nil.
func (h *health) lookupServed(id EndpointID) *servedEndpoint {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.served[id]
}

func (h *health) setEndpoint(name string, ready bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.endpoints[name] = ready
	if ready {
		h.ready = true
	}
}

// HealthReport is the JSON body of /health and /live.
type HealthReport struct {
	Status    string            `json:"status"`
	Uptime    Uptime            `json:"uptime"`
	Endpoints map[string]string `json:"endpoints"`
}

// Uptime is the reference system's duration shape.
type Uptime struct {
	Secs  int64 `json:"secs"`
	Nanos int64 `json:"nanos"`
}

func (h *health) report() (HealthReport, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ok := h.ready
	eps := make(map[string]string, len(h.endpoints))
	for name, ready := range h.endpoints {
		eps[name] = readiness(ready)
		ok = ok && ready
	}
	up := time.Since(h.start)
	return HealthReport{
		Status:    readiness(ok),
		Uptime:    Uptime{Secs: int64(up / time.Second), Nanos: int64(up % time.Second)},
		Endpoints: eps,
	}, ok
}

func readiness(ok bool) string {
	if ok {
		return "ready"
	}
	return "notready"
}
