package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/dynamo-go/dynamo/internal/testenv"
)

// The sink takes what a real OTLP exporter sends and counts the spans.
func TestOTLPSinkCountsSpans(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stderr testenv.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"otlp-sink", "--addr", "127.0.0.1:0"}, io.Discard, &stderr) }()
	addr := waitAddr(t, &stderr)
	exp, err := otlptracegrpc.New(t.Context(), otlptracegrpc.WithEndpoint(addr), otlptracegrpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	for range 3 {
		_, span := tp.Tracer("t").Start(t.Context(), "s")
		span.End()
	}
	if err := tp.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "spans=3") {
		t.Fatalf("the sink did not count 3 spans:\n%s", stderr.String())
	}
}
