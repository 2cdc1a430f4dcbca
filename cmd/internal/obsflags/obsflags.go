// Package obsflags reads a process's observability settings from its
// environment: the log format and level (DYN_LOGGING_JSONL, DYN_LOG) and
// the tracing export (OTEL_EXPORT_ENABLED, OTEL_SERVICE_NAME,
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL / OTEL_EXPORTER_OTLP_PROTOCOL). The
// commands call it; packages receive the results.
package obsflags

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

// EnvHelp documents the variables, for a command's --help.
const EnvHelp = `  DYN_LOG                                  log level: debug, info, warn, error (info)
  DYN_LOGGING_JSONL                        1: log JSON lines instead of text
  OTEL_EXPORT_ENABLED                      1: export traces over OTLP (default off)
  OTEL_SERVICE_NAME                        the service name in traces (the command's name)
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL       grpc (default) or http/protobuf; also OTEL_EXPORTER_OTLP_PROTOCOL
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT       where to export (also OTEL_EXPORTER_OTLP_ENDPOINT; the
                                           exporters read every OTEL_EXPORTER_OTLP_* variable)
`

// Logger returns the process's logger on w: JSON lines when
// DYN_LOGGING_JSONL is 1 or true, else text; at the DYN_LOG level (info
// when unset or unknown). Log lines written with a request's context carry
// its trace_id, span_id and x_request_id (telemetry.LogHandler).
func Logger(w io.Writer, env func(string) string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level(env("DYN_LOG"))}
	var h slog.Handler
	if truthy(env("DYN_LOGGING_JSONL")) {
		h = slog.NewJSONHandler(w, opts)
	} else {
		h = slog.NewTextHandler(w, opts)
	}
	return slog.New(telemetry.LogHandler(h))
}

// Tracing returns the tracing configuration; service names the process
// when OTEL_SERVICE_NAME is unset.
func Tracing(env func(string) string, service string) (telemetry.Config, error) {
	c := telemetry.Config{ServiceName: service, Export: truthy(env("OTEL_EXPORT_ENABLED"))}
	if v := env("OTEL_SERVICE_NAME"); v != "" {
		c.ServiceName = v
	}
	c.Protocol = env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if c.Protocol == "" {
		c.Protocol = env("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch c.Protocol {
	case "", telemetry.ProtocolGRPC, telemetry.ProtocolHTTP:
	default:
		return c, fmt.Errorf("OTLP protocol %q: want %s or %s", c.Protocol, telemetry.ProtocolGRPC, telemetry.ProtocolHTTP)
	}
	return c, nil
}

func truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

func level(s string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return slog.LevelInfo
	}
	return l
}
