package prefill_test

import (
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dynamo-go/dynamo/pkg/prefill"
)

// Each prefill attempt has a prefill span, with its handoff, attempt,
// worker (known once it answered; the failed attempt's route span names
// it) and outcome; a retried prefill gives two.
func TestPrefillSpans(t *testing.T) {
	f := newFleet(t)
	f.addPrefill(t, prefillWorker{crash: true})
	f.addPrefill(t, prefillWorker{})
	f.addDecode(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	s, _ := newStage(t, f, 1, prefill.Config{Retries: 1, TracerProvider: tp}, nil)
	s.SetPool(f.pool(t, 2))
	for range 2 {
		if _, err := run(t, s, request(40, 2)); err != nil {
			t.Fatal(err)
		}
	}
	outcomes := map[string]int{}
	for _, sp := range rec.Ended() {
		if sp.Name() != "prefill" {
			continue
		}
		attrs := map[string]string{}
		for _, kv := range sp.Attributes() {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		if attrs["prefill.handoff"] != "sync" || attrs["prefill.attempts"] == "" || attrs["prefill.outcome"] == "done" && attrs["prefill.worker_id"] == "" {
			t.Errorf("prefill span attributes %v", attrs)
		}
		outcomes[attrs["prefill.outcome"]]++
	}
	if outcomes["done"] != 2 || outcomes["failed"] != 1 {
		t.Errorf("prefill span outcomes %v, want 2 done and 1 failed (the crashed worker)", outcomes)
	}
}

// With the bootstrap handoff the decode request goes out before the
// prefill worker answers: it links to the prefill span.
func TestBootstrapDecodeLinksToThePrefillSpan(t *testing.T) {
	f := newFleet(t)
	f.addPrefill(t, prefillWorker{bootstrap: true})
	f.addDecode(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	s, _ := newStage(t, f, 1, prefill.Config{TracerProvider: tp}, nil)
	s.SetPool(f.pool(t, 1))
	if _, err := run(t, s, request(40, 2)); err != nil {
		t.Fatal(err)
	}
	var span sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		if sp.Name() == "prefill" {
			span = sp
		}
	}
	_, decs := f.requests()
	if span == nil || len(decs) != 1 {
		t.Fatalf("prefill span %v, %d decode requests", span, len(decs))
	}
	if l := decs[0].MigrationLink; l == nil || l.SpanID != span.SpanContext().SpanID().String() || l.TraceID != span.SpanContext().TraceID().String() {
		t.Fatalf("the decode request's link %+v, want the prefill span %s", l, span.SpanContext().SpanID())
	}
}
