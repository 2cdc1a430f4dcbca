package backend

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// StartSpan opens a span of an engine's own work (a prefill, a transfer, a
// call to the engine's server) as a child of the request's engine.generate
// span, which the worker puts in the Generate context: the seed's
// telemetry::start_span. It uses the tracer provider of that span, so it
// records exactly when the worker's tracing does. End the span when the
// work is done.
func StartSpan(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	tp := trace.SpanFromContext(ctx).TracerProvider()
	return tp.Tracer("github.com/dynamo-go/dynamo/pkg/backend").Start(ctx, name, opts...)
}
