package worker_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
	"github.com/dynamo-go/dynamo/pkg/runtime/runtimetest"
)

// attrs returns a span's attributes by key.
func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// The worker's spans continue the caller's trace: runtime.handle is a
// child of the caller's span (the traceparent travelled in the request
// headers), engine.generate a child of runtime.handle with the seed's
// attributes, and the first output names the engine span. A request that
// carries a migration link gets an engine span linked to that span.
func TestWorkerSpansContinueTheCallersTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	mem := discovery.NewMemSpace()
	rcfg := runtime.Config{Discovery: runtime.DiscoveryMem, TCPHost: "127.0.0.1", SystemPort: runtime.SystemPortDisabled, GracePeriod: 100 * time.Millisecond}
	h := &harness{runErr: make(chan error, 1)}
	h.worker = runtimetest.Start(t, rcfg, runtime.Deps{MemSpace: mem, TracerProvider: tp})
	h.caller = runtimetest.Start(t, rcfg, runtime.Deps{MemSpace: mem})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		h.runErr <- worker.Run(ctx, h.worker, &scripted{delay: 2 * time.Millisecond}, worker.Config{
			Endpoint: testEP, ModelPath: demoModel, ValidateStreams: true, TracerProvider: tp, DisaggregationMode: worker.ModeAggregated,
		})
	}()
	t.Cleanup(func() { cancel(); <-h.runErr })
	h.connect(t)

	callerCtx, callerSpan := tp.Tracer("caller").Start(t.Context(), "route")
	rc := runtime.NewContext(callerCtx, "traced-1")
	outs, err := h.generate(rc, request(5), nil)
	rc.Release()
	callerSpan.End()
	if err != nil {
		t.Fatal(err)
	}
	byName := func(name string) []sdktrace.ReadOnlySpan {
		var out []sdktrace.ReadOnlySpan
		for _, s := range rec.Ended() {
			if s.Name() == name {
				out = append(out, s)
			}
		}
		return out
	}
	waitSpans := func(name string, n int) []sdktrace.ReadOnlySpan {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for len(byName(name)) < n && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		got := byName(name)
		if len(got) < n {
			t.Fatalf("%d %s spans ended, want %d", len(got), name, n)
		}
		return got
	}
	handle := waitSpans("runtime.handle", 1)[0]
	engine := waitSpans("engine.generate", 1)[0]
	if handle.SpanContext().TraceID() != callerSpan.SpanContext().TraceID() || handle.Parent().SpanID() != callerSpan.SpanContext().SpanID() {
		t.Fatalf("runtime.handle is in trace %s under %s; want the caller's %s under %s",
			handle.SpanContext().TraceID(), handle.Parent().SpanID(), callerSpan.SpanContext().TraceID(), callerSpan.SpanContext().SpanID())
	}
	if engine.Parent().SpanID() != handle.SpanContext().SpanID() {
		t.Fatalf("engine.generate's parent is %s, want runtime.handle %s", engine.Parent().SpanID(), handle.SpanContext().SpanID())
	}
	a := attrs(engine)
	for key, want := range map[attribute.Key]any{
		"model": "scripted-model", "input_tokens": int64(3), "output_tokens": int64(5), "finish_reason": "length",
		"cancelled": false, "disagg_role": "aggregated",
	} {
		if got := a[key].AsInterface(); got != want {
			t.Errorf("engine.generate %s = %v, want %v", key, got, want)
		}
	}
	for _, key := range []attribute.Key{"ttft_ms", "avg_itl_ms", "itl_p50_ms", "itl_p99_ms", "itl_max_ms"} {
		if v, ok := a[key]; !ok || v.AsFloat64() < 0 || v.AsFloat64() > 5000 {
			t.Errorf("engine.generate %s = %v (present %v), want a sane number of ms", key, v.AsInterface(), ok)
		}
	}
	if a["itl_p50_ms"].AsFloat64() > a["itl_max_ms"].AsFloat64() || a["itl_p99_ms"].AsFloat64() > a["itl_max_ms"].AsFloat64() {
		t.Errorf("ITL percentiles above the maximum: %v", a)
	}
	if _, ok := a["error_kind"]; ok {
		t.Errorf("error_kind on a request that succeeded: %v", a["error_kind"].AsInterface())
	}
	first := outs[0].WorkerTraceLink
	if first == nil || first.SpanID != engine.SpanContext().SpanID().String() || first.TraceID != engine.SpanContext().TraceID().String() {
		t.Fatalf("first output's worker_trace_link %+v, want the engine span %s", first, engine.SpanContext().SpanID())
	}
	for _, o := range outs[1:] {
		if o.WorkerTraceLink != nil {
			t.Fatalf("a later output carries the link too: %+v", o)
		}
	}

	// The next attempt of a migrated request links to that engine span.
	req := request(2)
	req.MigrationLink = first
	rc = runtime.NewContext(t.Context(), "traced-2")
	if _, err := h.generate(rc, req, nil); err != nil {
		t.Fatal(err)
	}
	rc.Release()
	second := waitSpans("engine.generate", 2)[1]
	if links := second.Links(); len(links) != 1 || links[0].SpanContext.SpanID() != engine.SpanContext().SpanID() {
		t.Fatalf("the migrated attempt's engine span has links %v, want one to %s", links, engine.SpanContext().SpanID())
	}
	a = attrs(second)
	if a["migration_trace_id"].AsString() != first.TraceID || a["migration_span_id"].AsString() != first.SpanID {
		t.Fatalf("migration_trace_id/span_id = %v/%v, want %s/%s", a["migration_trace_id"].AsInterface(), a["migration_span_id"].AsInterface(), first.TraceID, first.SpanID)
	}
}

// A failing request's engine span says why, with an error status; a
// stopped one is cancelled.
func TestEngineSpanOfAStoppedRequest(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	h := newHarness(t, &scripted{delay: 20 * time.Millisecond}, worker.Config{TracerProvider: tp})
	h.connect(t)
	rc := runtime.NewContext(t.Context(), "stopped")
	defer rc.Release()
	_, err := h.generate(rc, request(100), func(o *backend.Output) {
		if len(o.TokenIDs) > 0 && o.TokenIDs[0] == 2 {
			rc.Stop()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(rec.Ended()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	spans := rec.Ended()
	if len(spans) != 1 || spans[0].Name() != "engine.generate" {
		t.Fatalf("spans %v, want one engine.generate", spans)
	}
	a := attrs(spans[0])
	if !a["cancelled"].AsBool() || a["finish_reason"].AsString() != "cancelled" {
		t.Fatalf("stopped request's engine span: cancelled %v, finish_reason %v", a["cancelled"].AsInterface(), a["finish_reason"].AsInterface())
	}
}
