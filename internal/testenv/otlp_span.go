package testenv

import (
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// Span is one received span, flattened from the OTLP export request:
// resource and scope are folded in, ids are lower-case hex, attribute
// values are plain Go values.
type Span struct {
	// TraceID is the 32-digit hex trace id.
	TraceID string
	// SpanID is the 16-digit hex span id.
	SpanID string
	// ParentSpanID is the parent's span id, "" for a root span.
	ParentSpanID string
	// Name is the span's name.
	Name string
	// Kind is "internal", "server", "client", "producer", "consumer" or
	// "unspecified" (the String of go.opentelemetry.io/otel/trace.SpanKind).
	Kind string
	// Service is the resource attribute service.name.
	Service string
	// Scope is the instrumentation scope's name (the tracer's name).
	Scope string
	// Resource holds the resource attributes, as Attrs does.
	Resource map[string]any
	// Attrs holds the span's attributes: string, int64, float64, bool,
	// []byte, []any for arrays and map[string]any for key-value lists.
	// Never nil.
	Attrs map[string]any
	// StatusCode is StatusUnset, StatusOK or StatusError.
	StatusCode string
	// StatusMessage is the status description (set with an error status).
	StatusMessage string
	// Events are the span's events (span.AddEvent, span.RecordError).
	Events []Event
	// Links are the span's links to other spans.
	Links []Link
	// Start and End are the span's start and end times.
	Start, End time.Time
}

// Values of Span.StatusCode.
const (
	StatusUnset = "unset"
	StatusOK    = "ok"
	StatusError = "error"
)

// Link is a span's link to another span.
type Link struct {
	// TraceID and SpanID are the linked span's ids, in hex.
	TraceID, SpanID string
	// Attrs are the link's attributes, as Span.Attrs.
	Attrs map[string]any
}

// Event is an event recorded on a span.
type Event struct {
	// Name is the event's name ("exception" for span.RecordError).
	Name string
	// Time is when it happened.
	Time time.Time
	// Attrs are its attributes, as Span.Attrs.
	Attrs map[string]any
}

// String is a one-line description of s for failure messages.
func (s Span) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q kind=%s service=%q trace=%s span=%s", s.Name, s.Kind, s.Service, s.TraceID, s.SpanID)
	if s.ParentSpanID != "" {
		fmt.Fprintf(&b, " parent=%s", s.ParentSpanID)
	}
	fmt.Fprintf(&b, " status=%s", s.StatusCode)
	if s.StatusMessage != "" {
		fmt.Fprintf(&b, "(%q)", s.StatusMessage)
	}
	if len(s.Attrs) > 0 {
		fmt.Fprintf(&b, " attrs=%s", formatAttrs(s.Attrs))
	}
	for _, l := range s.Links {
		fmt.Fprintf(&b, " link=%s/%s", l.TraceID, l.SpanID)
	}
	for _, e := range s.Events {
		fmt.Fprintf(&b, " event=%q", e.Name)
	}
	fmt.Fprintf(&b, " took=%s", s.End.Sub(s.Start))
	return b.String()
}

// formatAttrs formats attributes sorted by key.
func formatAttrs(attrs map[string]any) string {
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%#v", k, attrs[k])
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// Named returns the spans of spans named name.
func Named(spans []Span, name string) []Span {
	return filterSpans(spans, func(s Span) bool { return s.Name == name })
}

// InTrace returns the spans of spans that belong to trace traceID (hex).
func InTrace(spans []Span, traceID string) []Span {
	return filterSpans(spans, func(s Span) bool { return s.TraceID == traceID })
}

// ChildrenOf returns the spans of spans whose parent is parent.
func ChildrenOf(spans []Span, parent Span) []Span {
	return filterSpans(spans, func(s Span) bool {
		return s.TraceID == parent.TraceID && s.ParentSpanID == parent.SpanID
	})
}

func filterSpans(spans []Span, keep func(Span) bool) []Span {
	var out []Span
	for _, s := range spans {
		if keep(s) {
			out = append(out, s)
		}
	}
	return out
}

// flatten turns an export request into Spans.
func flatten(req *collectortrace.ExportTraceServiceRequest) []Span {
	var out []Span
	for _, rs := range req.GetResourceSpans() {
		res := attrMap(rs.GetResource().GetAttributes())
		service, _ := res["service.name"].(string)
		for _, ss := range rs.GetScopeSpans() {
			scope := ss.GetScope().GetName()
			for _, sp := range ss.GetSpans() {
				s := Span{
					TraceID:       hexID(sp.GetTraceId()),
					SpanID:        hexID(sp.GetSpanId()),
					ParentSpanID:  hexID(sp.GetParentSpanId()),
					Name:          sp.GetName(),
					Kind:          spanKind(sp.GetKind()),
					Service:       service,
					Scope:         scope,
					Resource:      res,
					Attrs:         attrMap(sp.GetAttributes()),
					StatusCode:    statusCode(sp.GetStatus().GetCode()),
					StatusMessage: sp.GetStatus().GetMessage(),
					Start:         unixNano(sp.GetStartTimeUnixNano()),
					End:           unixNano(sp.GetEndTimeUnixNano()),
				}
				for _, e := range sp.GetEvents() {
					s.Events = append(s.Events, Event{Name: e.GetName(), Time: unixNano(e.GetTimeUnixNano()), Attrs: attrMap(e.GetAttributes())})
				}
				for _, l := range sp.GetLinks() {
					s.Links = append(s.Links, Link{TraceID: hexID(l.GetTraceId()), SpanID: hexID(l.GetSpanId()), Attrs: attrMap(l.GetAttributes())})
				}
				out = append(out, s)
			}
		}
	}
	return out
}

// hexID is an id in lower-case hex; "" for an empty or all-zero id.
func hexID(b []byte) string {
	for _, c := range b {
		if c != 0 {
			return hex.EncodeToString(b)
		}
	}
	return ""
}

func unixNano(n uint64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(n))
}

func spanKind(k tracepb.Span_SpanKind) string {
	switch k {
	case tracepb.Span_SPAN_KIND_INTERNAL:
		return "internal"
	case tracepb.Span_SPAN_KIND_SERVER:
		return "server"
	case tracepb.Span_SPAN_KIND_CLIENT:
		return "client"
	case tracepb.Span_SPAN_KIND_PRODUCER:
		return "producer"
	case tracepb.Span_SPAN_KIND_CONSUMER:
		return "consumer"
	}
	return "unspecified"
}

func statusCode(c tracepb.Status_StatusCode) string {
	switch c {
	case tracepb.Status_STATUS_CODE_OK:
		return StatusOK
	case tracepb.Status_STATUS_CODE_ERROR:
		return StatusError
	}
	return StatusUnset
}

// attrMap converts attributes; it never returns nil.
func attrMap(kvs []*commonpb.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = attrValue(kv.GetValue())
	}
	return m
}

func attrValue(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_BytesValue:
		return x.BytesValue
	case *commonpb.AnyValue_ArrayValue:
		out := make([]any, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, attrValue(e))
		}
		return out
	case *commonpb.AnyValue_KvlistValue:
		return attrMap(x.KvlistValue.GetValues())
	}
	return nil
}
