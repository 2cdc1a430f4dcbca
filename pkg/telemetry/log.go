package telemetry

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// RequestIDKey is the context key whose value, a string, is the request
// id a log line carries as x_request_id. runtime.Context answers it with
// its id.
type RequestIDKey struct{}

// RequestID returns the request id ctx carries, or "".
func RequestID(ctx context.Context) string {
	if ctx == nil {
		return ""
	}
	id, _ := ctx.Value(RequestIDKey{}).(string)
	return id
}

// LogHandler wraps h so that every record logged with a context (the
// slog ...Context methods) carries that context's trace_id and span_id
// (when it has a valid span context) and x_request_id (when it has a
// request id).
func LogHandler(h slog.Handler) slog.Handler { return logHandler{h} }

type logHandler struct{ slog.Handler }

func (h logHandler) Handle(ctx context.Context, r slog.Record) error {
	if ctx != nil {
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
		}
		if id := RequestID(ctx); id != "" {
			r.AddAttrs(slog.String("x_request_id", id))
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return logHandler{h.Handler.WithAttrs(as)}
}

func (h logHandler) WithGroup(name string) slog.Handler {
	return logHandler{h.Handler.WithGroup(name)}
}
