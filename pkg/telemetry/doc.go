// Package telemetry is the stack's tracing and log correlation: the
// OpenTelemetry tracer provider a process builds from its configuration
// (Provider), W3C trace context carried in request headers (Inject,
// Extract), the links between the spans of one request's attempts
// (Link), and a slog handler that stamps every log line written while
// serving a request with its trace_id, span_id and x_request_id
// (LogHandler).
//
// Spans always exist, so log lines carry a trace id even when nothing is
// exported: with export off the provider samples nothing, spans do not
// record, and instrumented code skips the work of recording (check
// Span.IsRecording). Packages receive a trace.TracerProvider through
// their Deps; nil means no tracing at all (trace/noop), where an incoming
// trace context still passes through unchanged.
//
// docs/observability.md lists the spans, their attributes and the
// environment that configures export.
package telemetry
