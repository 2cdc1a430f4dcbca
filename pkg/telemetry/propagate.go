package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// traceContext reads and writes the W3C traceparent and tracestate
// headers.
var traceContext propagation.TraceContext

// Inject writes the trace context of ctx's span into headers
// (traceparent, and tracestate when there is one); nothing when ctx has
// no valid span context.
func Inject(ctx context.Context, headers map[string]string) {
	traceContext.Inject(ctx, propagation.MapCarrier(headers))
}

// Extract returns ctx carrying the remote span context that headers hold
// (traceparent, tracestate), or ctx unchanged when they hold none or an
// invalid one. Header names are matched in lower case, as they travel.
func Extract(ctx context.Context, headers map[string]string) context.Context {
	return traceContext.Extract(ctx, propagation.MapCarrier(headers))
}

// HeaderCarrier adapts HTTP request headers for ExtractHTTP.
type HeaderCarrier = propagation.HeaderCarrier

// ExtractHTTP returns ctx carrying the span context of an incoming HTTP
// request's traceparent and tracestate headers, if valid.
func ExtractHTTP(ctx context.Context, h HeaderCarrier) context.Context {
	return traceContext.Extract(ctx, h)
}

// Tracer returns the named tracer of tp, or a no-op tracer when tp is nil
// (the span context of the parent passes through).
func Tracer(tp trace.TracerProvider, name string) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer(name)
}

// attrsKey carries span attributes for a span a later stage starts.
type attrsKey struct{}

// WithAttributes returns ctx carrying kvs, for the next span a later
// stage starts to record (see Attributes): a decision made before that
// span exists, like the KV router's choice and its overlap, which the
// push router's routing span reports.
func WithAttributes(ctx context.Context, kvs ...attribute.KeyValue) context.Context {
	return context.WithValue(ctx, attrsKey{}, append(Attributes(ctx), kvs...))
}

// Attributes returns the attributes ctx carries (WithAttributes).
func Attributes(ctx context.Context) []attribute.KeyValue {
	kvs, _ := ctx.Value(attrsKey{}).([]attribute.KeyValue)
	return kvs[:len(kvs):len(kvs)]
}
