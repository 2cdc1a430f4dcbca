package frontend

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

// startServerSpan starts the server span of a /v1 request: a child of the
// client's traceparent when it sent a valid one, else the root of a new
// trace.
func (s *Service) startServerSpan(r *http.Request, id string) (context.Context, trace.Span) {
	ctx := telemetry.ExtractHTTP(r.Context(), telemetry.HeaderCarrier(r.Header))
	return s.tracer.Start(ctx, r.Method+" "+r.URL.Path, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			attribute.String("http.request.method", r.Method),
			attribute.String("http.route", r.URL.Path),
			attribute.String("x_request_id", id),
		))
}

// endServerSpan records the response status and ends the span; a 5xx
// answer is an error (a 4xx is the client's).
func endServerSpan(span trace.Span, w *statusWriter) {
	code := w.code
	if code == 0 {
		code = http.StatusOK
	}
	span.SetAttributes(attribute.Int("http.response.status_code", code))
	if code >= 500 {
		span.SetStatus(codes.Error, http.StatusText(code))
	}
	span.End()
}

// statusWriter remembers the status code a handler sent and counts the
// body bytes written (the access log's). Unwrap lets
// http.ResponseController reach the connection's flush and deadlines.
type statusWriter struct {
	http.ResponseWriter
	code  int
	bytes int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Unwrap returns the wrapped writer (for http.ResponseController).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
