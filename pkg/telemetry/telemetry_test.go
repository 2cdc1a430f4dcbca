package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

// requestCtx carries a request id the way runtime.Context does.
type requestCtx struct {
	context.Context
	id string
}

func (c requestCtx) Value(key any) any {
	if key == (telemetry.RequestIDKey{}) {
		return c.id
	}
	return c.Context.Value(key)
}

// With export off spans do not record, but they have ids: a log line
// written with the request's context carries its trace, span and request
// ids, and the trace context crosses a hop in the headers.
func TestExportOffStillCorrelatesLogsAndPropagates(t *testing.T) {
	p, err := telemetry.New(t.Context(), telemetry.Config{ServiceName: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tr := p.TracerProvider().Tracer("test")
	ctx, span := tr.Start(requestCtx{t.Context(), "req-1"}, "server")
	defer span.End()
	if span.IsRecording() {
		t.Fatal("span records with export off")
	}
	sc := span.SpanContext()
	if !sc.IsValid() {
		t.Fatal("span without ids with export off: logs would carry no trace_id")
	}

	var buf bytes.Buffer
	log := slog.New(telemetry.LogHandler(slog.NewJSONHandler(&buf, nil))).With("component", "x")
	log.InfoContext(ctx, "hello")
	log.Info("no context")
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	var first, second map[string]any
	if err := json.Unmarshal(lines[0], &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(lines[1], &second); err != nil {
		t.Fatal(err)
	}
	if first["trace_id"] != sc.TraceID().String() || first["span_id"] != sc.SpanID().String() || first["x_request_id"] != "req-1" || first["component"] != "x" {
		t.Fatalf("log line with the request's context: %s", lines[0])
	}
	if _, ok := second["trace_id"]; ok {
		t.Fatalf("log line without a context carries a trace id: %s", lines[1])
	}

	headers := map[string]string{}
	telemetry.Inject(ctx, headers)
	if headers["traceparent"] == "" {
		t.Fatalf("no traceparent injected: %v", headers)
	}
	remote := trace.SpanContextFromContext(telemetry.Extract(context.Background(), headers))
	if remote.TraceID() != sc.TraceID() || remote.SpanID() != sc.SpanID() || !remote.IsRemote() {
		t.Fatalf("extracted %v, want the trace and span of %v", remote, sc)
	}
	if got := telemetry.Extract(context.Background(), map[string]string{"traceparent": "garbage"}); trace.SpanContextFromContext(got).IsValid() {
		t.Fatal("an invalid traceparent gave a span context")
	}
}

// A link survives its JSON form and becomes an OTel link; a malformed one
// is ignored.
func TestLinkRoundTrip(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	_, span := tp.Tracer("t").Start(context.Background(), "engine.generate")
	span.End()
	l := telemetry.LinkOf(span.SpanContext())
	b, _ := json.Marshal(l)
	var back telemetry.Link
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	ol, ok := back.OTel()
	if !ok || ol.SpanContext.TraceID() != span.SpanContext().TraceID() || ol.SpanContext.SpanID() != span.SpanContext().SpanID() {
		t.Fatalf("link %s came back as %v, %v", b, ol.SpanContext, ok)
	}
	if _, ok := (&telemetry.Link{TraceID: "zz", SpanID: "00"}).OTel(); ok {
		t.Fatal("a malformed link was accepted")
	}
	if telemetry.LinkOf(trace.SpanContext{}) != nil {
		t.Fatal("a link to an invalid span context")
	}
	var nilLink *telemetry.Link
	if _, ok := nilLink.OTel(); ok {
		t.Fatal("a nil link was accepted")
	}
}

// Attributes carried in the context reach a later stage's span.
func TestAttributesThroughContext(t *testing.T) {
	ctx := telemetry.WithAttributes(context.Background(), attribute.String("a", "1"))
	ctx2 := telemetry.WithAttributes(ctx, attribute.String("b", "2"))
	if n := len(telemetry.Attributes(ctx)); n != 1 {
		t.Fatalf("the first context holds %d attributes, want 1 (appending must not alias)", n)
	}
	got := telemetry.Attributes(ctx2)
	if len(got) != 2 || got[0].Value.AsString() != "1" || got[1].Value.AsString() != "2" {
		t.Fatalf("attributes %v", got)
	}
}
