package telemetry

import (
	"go.opentelemetry.io/otel/trace"
)

// Link names a span of another part of one request's story: the worker's
// engine span that served an earlier attempt (a migration) or the prefill
// of a disaggregated request. It travels in the engine request
// (migration_link) and in the first output of a stream
// (worker_trace_link), hex encoded as in traceparent.
type Link struct {
	TraceID string `json:"trace_id"`
	SpanID  string `json:"span_id"`
}

// LinkOf returns the link to sc's span, or nil for an invalid span
// context.
func LinkOf(sc trace.SpanContext) *Link {
	if !sc.IsValid() {
		return nil
	}
	return &Link{TraceID: sc.TraceID().String(), SpanID: sc.SpanID().String()}
}

// SpanContext returns the span context l names, remote and sampled (the
// linked span was recorded where it ran, or not: the link holds either
// way), and false if l is nil or malformed.
func (l *Link) SpanContext() (trace.SpanContext, bool) {
	if l == nil {
		return trace.SpanContext{}, false
	}
	tid, err := trace.TraceIDFromHex(l.TraceID)
	if err != nil {
		return trace.SpanContext{}, false
	}
	sid, err := trace.SpanIDFromHex(l.SpanID)
	if err != nil {
		return trace.SpanContext{}, false
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
	return sc, sc.IsValid()
}

// OTel returns l as an OpenTelemetry link with the given attributes, and
// false if l names no valid span.
func (l *Link) OTel() (trace.Link, bool) {
	sc, ok := l.SpanContext()
	if !ok {
		return trace.Link{}, false
	}
	return trace.Link{SpanContext: sc}, true
}
