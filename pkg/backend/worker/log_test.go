package worker_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

// syncBuffer is a log destination safe to read while the worker writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) dump() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// endLines returns the "worker: request ended" lines of request id.
func (b *syncBuffer) endLines(t *testing.T, id string) []map[string]any {
	t.Helper()
	b.mu.Lock()
	data := append([]byte(nil), b.buf.Bytes()...)
	b.mu.Unlock()
	dec := json.NewDecoder(bytes.NewReader(data))
	var out []map[string]any
	for {
		var l map[string]any
		if err := dec.Decode(&l); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("a log line is not JSON: %v\n%s", err, data)
		}
		if l["msg"] == "worker: request ended" && l["x_request_id"] == id {
			out = append(out, l)
		}
	}
	return out
}

// At debug level the worker logs the end of each request once, with the
// request's id (the caller's), the trace id and its engine span's id,
// and how it ended: tokens, finish reason, stopped or not.
func TestWorkerLogsTheEndOfEachRequest(t *testing.T) {
	var logs syncBuffer
	log := slog.New(telemetry.LogHandler(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	h := newHarness(t, &scripted{delay: 2 * time.Millisecond}, worker.Config{Logger: log, TracerProvider: tp})
	h.connect(t)

	wait := func(id string) map[string]any {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for len(logs.endLines(t, id)) == 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if got := logs.endLines(t, id); len(got) != 1 {
			t.Fatalf("%d end lines of %s, want 1:\n%s", len(got), id, logs.dump())
		}
		return logs.endLines(t, id)[0]
	}
	engineSpan := func(spanID string) sdktrace.ReadOnlySpan {
		for _, s := range rec.Ended() {
			if s.Name() == "engine.generate" && s.SpanContext().SpanID().String() == spanID {
				return s
			}
		}
		return nil
	}

	callerCtx, callerSpan := tp.Tracer("caller").Start(t.Context(), "route")
	defer callerSpan.End()
	trace := callerSpan.SpanContext().TraceID().String()

	rc := runtime.NewContext(callerCtx, "logged-1")
	if _, err := h.generate(rc, request(5), nil); err != nil {
		t.Fatal(err)
	}
	rc.Release()
	l := wait("logged-1")
	if l["level"] != "DEBUG" || l["trace_id"] != trace || engineSpan(l["span_id"].(string)) == nil {
		t.Errorf("end line %v: want DEBUG, trace %s and the engine.generate span", l, trace)
	}
	if l["model"] != "scripted-model" || l["prompt_tokens"] != 3.0 || l["completion_tokens"] != 5.0 || l["finish_reason"] != "length" ||
		l["stopped"] != false || l["killed"] != false || l["error_kind"] != nil {
		t.Errorf("end line of a whole answer: %v", l)
	}
	if ttft, d := l["ttft_ms"].(float64), l["duration_ms"].(float64); !(ttft > 0 && d >= ttft) {
		t.Errorf("ttft %v ms, duration %v ms", l["ttft_ms"], l["duration_ms"])
	}

	rc = runtime.NewContext(callerCtx, "logged-2")
	_, err := h.generate(rc, request(10000), func(o *backend.Output) {
		if len(o.TokenIDs) == 1 && o.TokenIDs[0] == 3 {
			rc.Stop()
		}
	})
	rc.Release()
	if err != nil {
		t.Fatal(err)
	}
	l = wait("logged-2")
	if l["trace_id"] != trace || l["finish_reason"] != "cancelled" || l["stopped"] != true || l["killed"] != false {
		t.Errorf("end line of a stopped request: %v", l)
	}
}

// Below debug level the worker writes no line per request.
func TestWorkerLogsNoRequestAtInfo(t *testing.T) {
	var logs syncBuffer
	log := slog.New(telemetry.LogHandler(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	h := newHarness(t, &scripted{}, worker.Config{Logger: log})
	h.connect(t)
	rc := runtime.NewContext(t.Context(), "quiet-1")
	if _, err := h.generate(rc, request(3), nil); err != nil {
		t.Fatal(err)
	}
	rc.Release()
	time.Sleep(20 * time.Millisecond)
	if out := logs.dump(); bytes.Contains([]byte(out), []byte("quiet-1")) {
		t.Errorf("a line of the request at info level:\n%s", out)
	}
}
