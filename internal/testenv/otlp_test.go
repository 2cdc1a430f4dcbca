package testenv

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The real OpenTelemetry SDK exporters, over gRPC and OTLP/HTTP, configured
// by options or by the OTEL_EXPORTER_OTLP_* variables as a process would
// be, deliver a parent and a child span that arrive flattened: ids,
// parentage, service name, kinds, attributes, a link, statuses and the
// error event.
func TestOTLPReceivesSDKExports(t *testing.T) {
	for _, tc := range []struct {
		name string
		new  func(ctx context.Context, t *testing.T, o *OTLP) (sdktrace.SpanExporter, error)
	}{
		{"grpc", func(ctx context.Context, t *testing.T, o *OTLP) (sdktrace.SpanExporter, error) {
			return otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(o.GRPCEndpoint()), otlptracegrpc.WithInsecure())
		}},
		{"grpc-env-gzip", func(ctx context.Context, t *testing.T, o *OTLP) (sdktrace.SpanExporter, error) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+o.GRPCEndpoint())
			t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
			return otlptracegrpc.New(ctx)
		}},
		{"http", func(ctx context.Context, t *testing.T, o *OTLP) (sdktrace.SpanExporter, error) {
			return otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(o.HTTPEndpoint()+"/v1/traces"))
		}},
		{"http-env-gzip", func(ctx context.Context, t *testing.T, o *OTLP) (sdktrace.SpanExporter, error) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", o.HTTPEndpoint())
			t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
			return otlptracehttp.New(ctx)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := StartOTLP(t)
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			exp, err := tc.new(ctx, t, o)
			if err != nil {
				t.Fatal(err)
			}
			want := emitSpans(ctx, t, exp)
			got := o.WaitFor(t, 10*time.Second, func(spans []Span) bool { return len(spans) >= 2 })
			if len(got) != 2 {
				t.Fatalf("received %d spans, want 2:\n%s", len(got), DumpSpans(got))
			}
			checkSpans(t, got, want)
			if n := len(o.ByName("child")); n != 1 {
				t.Errorf("ByName(child): %d spans, want 1", n)
			}
			o.Reset()
			if n := len(o.Spans()); n != 0 {
				t.Errorf("after Reset: %d spans", n)
			}
		})
	}
}

// linkedTrace and linkedSpan are the ids of the span the child links to.
const (
	linkedTrace = "0af7651916cd43dd8448eb211c80319c"
	linkedSpan  = "b7ad6b7169203331"
)

// emitSpans exports, through exp, a server span "parent" with status ok
// and a client span "child" with an error, and returns them as the
// receiver should flatten them (without times or events).
func emitSpans(ctx context.Context, t *testing.T, exp sdktrace.SpanExporter) []Span {
	t.Helper()
	tid, _ := trace.TraceIDFromHex(linkedTrace)
	sid, _ := trace.SpanIDFromHex(linkedSpan)
	linked := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})

	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "otlp-test"))),
		sdktrace.WithBatcher(exp),
	)
	tr := tp.Tracer("testenv-test")
	pctx, parent := tr.Start(ctx, "parent", trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		attribute.String("x_request_id", "req-1"),
		attribute.Int("tokens", 42),
		attribute.Float64("ratio", 0.5),
		attribute.Bool("stream", true),
	))
	_, child := tr.Start(pctx, "child", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.Int64("worker_id", 7)),
		trace.WithLinks(trace.Link{SpanContext: linked, Attributes: []attribute.KeyValue{attribute.String("reason", "migration")}}),
	)
	child.RecordError(errors.New("worker died"))
	child.SetStatus(codes.Error, "worker died")
	child.End()
	parent.SetStatus(codes.Ok, "")
	parent.End()
	if err := tp.Shutdown(ctx); err != nil { // flushes the batch
		t.Fatalf("exporting: %v", err)
	}

	ptid := parent.SpanContext().TraceID().String()
	res := map[string]any{"service.name": "otlp-test"}
	return []Span{{
		TraceID: ptid, SpanID: parent.SpanContext().SpanID().String(),
		Name: "parent", Kind: "server", Service: "otlp-test", Scope: "testenv-test", Resource: res,
		Attrs:      map[string]any{"x_request_id": "req-1", "tokens": int64(42), "ratio": 0.5, "stream": true},
		StatusCode: StatusOK,
	}, {
		TraceID: ptid, SpanID: child.SpanContext().SpanID().String(), ParentSpanID: parent.SpanContext().SpanID().String(),
		Name: "child", Kind: "client", Service: "otlp-test", Scope: "testenv-test", Resource: res,
		Attrs:      map[string]any{"worker_id": int64(7)},
		StatusCode: StatusError, StatusMessage: "worker died",
		Links: []Link{{TraceID: linkedTrace, SpanID: linkedSpan, Attrs: map[string]any{"reason": "migration"}}},
	}}
}

// checkSpans compares got with want by name, and checks what want leaves
// out: times and the child's error event.
func checkSpans(t *testing.T, got, want []Span) {
	t.Helper()
	byName := cmpopts.SortSlices(func(a, b Span) bool { return a.Name < b.Name })
	if d := cmp.Diff(want, got, byName, cmpopts.IgnoreFields(Span{}, "Start", "End", "Events")); d != "" {
		t.Errorf("spans (-want +got):\n%s", d)
	}
	for _, s := range got {
		if s.Start.IsZero() || s.End.Before(s.Start) || time.Since(s.Start) > time.Minute {
			t.Errorf("%s: start %v end %v", s.Name, s.Start, s.End)
		}
	}
	parent, child := Named(got, "parent"), Named(got, "child")
	if len(parent) != 1 || len(child) != 1 {
		t.Fatalf("Named: %d parents, %d children", len(parent), len(child))
	}
	if c := ChildrenOf(got, parent[0]); len(c) != 1 || c[0].Name != "child" {
		t.Errorf("ChildrenOf(parent) = %v", c)
	}
	if n := len(InTrace(got, parent[0].TraceID)); n != 2 {
		t.Errorf("InTrace: %d spans, want 2", n)
	}
	if ev := child[0].Events; len(ev) != 1 || ev[0].Name != "exception" || ev[0].Attrs["exception.message"] != "worker died" || ev[0].Time.IsZero() {
		t.Errorf("child events %+v, want one exception event for \"worker died\"", ev)
	}
}

// otlpJSON is an export request in OTLP/JSON as the specification writes
// it: hex ids, enums as numbers, 64-bit integers as strings, and a field
// this receiver does not know.
const otlpJSON = `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"json-svc"}}]},
 "scopeSpans":[{"scope":{"name":"json-scope"},"spans":[{
  "traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","parentSpanId":"eee19b7ec3c1b173",
  "name":"from-json","kind":3,"startTimeUnixNano":"1544712660000000000","endTimeUnixNano":"1544712661000000000",
  "attributes":[{"key":"n","value":{"intValue":"42"}},{"key":"f","value":{"doubleValue":1.5}},{"key":"b","value":{"boolValue":true}},
   {"key":"list","value":{"arrayValue":{"values":[{"stringValue":"a"},{"intValue":"1"}]}}}],
  "links":[{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","attributes":[{"key":"k","value":{"stringValue":"v"}}]}],
  "status":{"code":2,"message":"bad"},"futureField":1}]}]}]}`

// OTLP/HTTP with a JSON body, gzip-compressed, is decoded with hex ids;
// the answer is JSON.
func TestOTLPHTTPAcceptsGzipJSON(t *testing.T) {
	o := StartOTLP(t)
	var body bytes.Buffer
	zw := gzip.NewWriter(&body)
	_, _ = zw.Write([]byte(otlpJSON))
	_ = zw.Close()
	code, ct, msg := post(t, o, "application/json; charset=utf-8", "gzip", body.Bytes())
	if code != http.StatusOK || ct != "application/json" {
		t.Fatalf("POST: %d %q %s", code, ct, msg)
	}
	want := Span{
		TraceID: "5b8efff798038103d269b633813fc60c", SpanID: "eee19b7ec3c1b174", ParentSpanID: "eee19b7ec3c1b173",
		Name: "from-json", Kind: "client", Service: "json-svc", Scope: "json-scope",
		Resource:   map[string]any{"service.name": "json-svc"},
		Attrs:      map[string]any{"n": int64(42), "f": 1.5, "b": true, "list": []any{"a", int64(1)}},
		StatusCode: StatusError, StatusMessage: "bad",
		Links: []Link{{TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "b7ad6b7169203331", Attrs: map[string]any{"k": "v"}}},
		Start: time.Unix(1544712660, 0), End: time.Unix(1544712661, 0),
	}
	if d := cmp.Diff([]Span{want}, o.Spans()); d != "" {
		t.Errorf("spans (-want +got):\n%s", d)
	}
}

// Requests the receiver cannot take are refused with the status code that
// says why, and store nothing.
func TestOTLPHTTPRefuses(t *testing.T) {
	o := StartOTLP(t)
	for _, tc := range []struct {
		name, contentType, encoding string
		body                        []byte
		want                        int
	}{
		{"content type", "text/plain", "", []byte("x"), http.StatusUnsupportedMediaType},
		{"encoding", "application/x-protobuf", "br", []byte("x"), http.StatusUnsupportedMediaType},
		{"protobuf", "application/x-protobuf", "", []byte{0xff, 0xff, 0xff}, http.StatusBadRequest},
		{"json", "application/json", "", []byte("{"), http.StatusBadRequest},
		{"hex id", "application/json", "", []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"spanId":"zzzzzzzzzzzzzzzz"}]}]}]}`), http.StatusBadRequest},
		{"gzip", "application/x-protobuf", "gzip", []byte("not gzip"), http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, _, msg := post(t, o, tc.contentType, tc.encoding, tc.body); code != tc.want {
				t.Errorf("status %d (%s), want %d", code, msg, tc.want)
			}
		})
	}
	resp, err := http.Get(o.HTTPEndpoint() + "/v1/traces")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", resp.StatusCode)
	}
	if n := len(o.Spans()); n != 0 {
		t.Errorf("%d spans stored", n)
	}
}

// post sends body to the receiver's /v1/traces and returns the status,
// content type and body of the answer.
func post(t *testing.T, o *OTLP, contentType, encoding string, body []byte) (int, string, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, o.HTTPEndpoint()+"/v1/traces", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// fatalRecorder is a testing.TB whose Fatalf records instead of stopping.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) { f.msg = fmt.Sprintf(format, args...) }

// WaitFor that times out fails the test with every span received.
func TestOTLPWaitForDumpsWhatArrived(t *testing.T) {
	o := StartOTLP(t)
	if code, _, msg := post(t, o, "application/json", "", []byte(otlpJSON)); code != http.StatusOK {
		t.Fatalf("POST: %d %s", code, msg)
	}
	r := &fatalRecorder{TB: t}
	if got := o.WaitFor(r, 50*time.Millisecond, func(s []Span) bool { return len(Named(s, "missing")) > 0 }); got != nil {
		t.Errorf("WaitFor returned %v after timing out", got)
	}
	for _, want := range []string{"timed out after 50ms", "received 1:", `"from-json" kind=client service="json-svc"`, "parent=eee19b7ec3c1b173", "status=error(\"bad\")"} {
		if !strings.Contains(r.msg, want) {
			t.Errorf("failure message %q lacks %q", r.msg, want)
		}
	}
}
