package backend_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// An engine's span is a child of the engine span in its context, recorded
// by the same provider; without one it records nothing.
func TestStartSpanIsAChildOfTheEngineSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, engine := tp.Tracer("worker").Start(context.Background(), "engine.generate")
	_, own := backend.StartSpan(ctx, "prefill")
	own.End()
	engine.End()
	spans := rec.Ended()
	if len(spans) != 2 || spans[0].Name() != "prefill" || spans[0].Parent().SpanID() != engine.SpanContext().SpanID() {
		t.Fatalf("ended spans %v: want prefill under engine.generate", spans)
	}
	if _, none := backend.StartSpan(context.Background(), "x"); none.IsRecording() {
		t.Fatal("a span without an engine span in the context records")
	}
}
