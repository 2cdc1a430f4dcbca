package telemetry

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Protocols of OTLP export.
const (
	ProtocolGRPC = "grpc"
	ProtocolHTTP = "http/protobuf"
)

// Config configures a process's tracing.
type Config struct {
	// ServiceName names the process in the traces (OTEL_SERVICE_NAME,
	// else the command's name).
	ServiceName string
	// Export sends the spans to an OTLP receiver (OTEL_EXPORT_ENABLED=1).
	// Off, spans exist (ids for the logs, propagation) but none is
	// sampled or recorded.
	Export bool
	// Protocol is ProtocolGRPC (default) or ProtocolHTTP
	// (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL).
	// The exporters read the endpoint, headers, timeout, compression and
	// TLS from the standard OTEL_EXPORTER_OTLP_* variables themselves.
	Protocol string
}

// Provider is a process's tracer provider. Close flushes what is
// buffered.
type Provider struct {
	tp *sdktrace.TracerProvider
}

// New builds the provider cfg describes. With export on it dials nothing
// yet: the exporter connects on its first batch.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", cfg.ServiceName)))
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	if !cfg.Export {
		return &Provider{tp: sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSampler(sdktrace.NeverSample()))}, nil
	}
	var client otlptrace.Client
	switch cfg.Protocol {
	case "", ProtocolGRPC:
		client = otlptracegrpc.NewClient()
	case ProtocolHTTP:
		client = otlptracehttp.NewClient()
	default:
		return nil, fmt.Errorf("telemetry: OTLP protocol %q is not supported (use %s or %s)", cfg.Protocol, ProtocolGRPC, ProtocolHTTP)
	}
	exp, err := otlptrace.New(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP exporter: %w", err)
	}
	return &Provider{tp: sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(exp))}, nil
}

// TracerProvider returns the provider to hand to the packages' Deps.
func (p *Provider) TracerProvider() trace.TracerProvider { return p.tp }

// Close exports the spans still buffered (waiting at most 5 s) and stops
// the exporter.
func (p *Provider) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("telemetry: flush spans: %w", err)
	}
	return nil
}
