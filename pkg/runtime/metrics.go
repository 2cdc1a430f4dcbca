package runtime

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Label names injected on every endpoint metric.
const (
	LabelNamespace = "dynamo_namespace"
	LabelComponent = "dynamo_component"
	LabelEndpoint  = "dynamo_endpoint"
)

var endpointLabels = []string{LabelNamespace, LabelComponent, LabelEndpoint}

// metrics are the work-handler metrics of the worker side (spec §6.2).
type metrics struct {
	requests      *prometheus.CounterVec
	inflight      *prometheus.GaugeVec
	duration      *prometheus.HistogramVec
	requestBytes  *prometheus.CounterVec
	responseBytes *prometheus.CounterVec
	errors        *prometheus.CounterVec
	transit       *prometheus.HistogramVec
	firstResponse *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	start := time.Now()
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dynamo_component_requests_total", Help: "Requests received by the endpoint handler.",
		}, endpointLabels),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "dynamo_component_inflight_requests", Help: "Requests currently being handled.",
		}, endpointLabels),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "dynamo_component_request_duration_seconds", Help: "Handler time from receipt to the end of the response stream.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
		}, endpointLabels),
		requestBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dynamo_component_request_bytes_total", Help: "Request envelope bytes received.",
		}, endpointLabels),
		responseBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dynamo_component_response_bytes_total", Help: "Response stream bytes sent.",
		}, endpointLabels),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dynamo_component_errors_total", Help: "Handler errors by kind: invalid_message, deserialization, response_stream, generate, publish_response, publish_final.",
		}, append(endpointLabels[:3:3], "error_type")),
		transit: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "dynamo_component_network_transit_seconds", Help: "Caller send timestamp to worker receipt.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, endpointLabels),
		firstResponse: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "dynamo_component_time_to_first_response_seconds", Help: "Worker receipt to the first response item sent.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12),
		}, endpointLabels),
	}
	uptime := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "dynamo_component_uptime_seconds", Help: "Seconds since the runtime started.",
	}, func() float64 { return time.Since(start).Seconds() })
	for _, c := range []prometheus.Collector{m.requests, m.inflight, m.duration, m.requestBytes, m.responseBytes, m.errors, m.transit, m.firstResponse, uptime} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// endpointMetrics are the metrics of one endpoint, labels bound.
type endpointMetrics struct {
	requests      prometheus.Counter
	inflight      prometheus.Gauge
	duration      prometheus.Observer
	requestBytes  prometheus.Counter
	responseBytes prometheus.Counter
	errors        *prometheus.CounterVec
	transit       prometheus.Observer
	firstResponse prometheus.Observer
}

func (m *metrics) endpoint(id EndpointID) *endpointMetrics {
	l := prometheus.Labels{LabelNamespace: id.Namespace, LabelComponent: id.Component, LabelEndpoint: id.Name}
	return &endpointMetrics{
		requests:      m.requests.With(l),
		inflight:      m.inflight.With(l),
		duration:      m.duration.With(l),
		requestBytes:  m.requestBytes.With(l),
		responseBytes: m.responseBytes.With(l),
		errors:        m.errors.MustCurryWith(l),
		transit:       m.transit.With(l),
		firstResponse: m.firstResponse.With(l),
	}
}
