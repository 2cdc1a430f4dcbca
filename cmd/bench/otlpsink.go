package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync/atomic"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// otlpSinkFlags are bench otlp-sink's flags.
type otlpSinkFlags struct {
	fs   *flag.FlagSet
	addr *string
}

func newOTLPSinkFlags(stderr io.Writer) *otlpSinkFlags {
	fs := flag.NewFlagSet("bench otlp-sink", flag.ContinueOnError)
	fs.SetOutput(stderr)
	return &otlpSinkFlags{fs: fs, addr: fs.String("addr", "127.0.0.1:4317", "address of the OTLP/gRPC trace receiver")}
}

// otlpSinkMain receives OTLP/gRPC trace exports and drops them, counting
// the spans, until SIGINT/SIGTERM: the receiving end of a benchmark with
// tracing export on, without the cost of a real trace store on the
// measured machine.
func otlpSinkMain(ctx context.Context, args []string, _, stderr io.Writer) int {
	f := newOTLPSinkFlags(stderr)
	if code := parseFlags(f.fs, args); code >= 0 {
		return code
	}
	if code := noArgs(f.fs); code >= 0 {
		return code
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	ln, err := net.Listen("tcp", *f.addr)
	if err != nil {
		fmt.Fprintf(stderr, "bench otlp-sink: %v\n", err)
		return 1
	}
	sink := &traceSink{}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, sink)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("otlp sink listening", "addr", ln.Addr().String())
	select {
	case err = <-served:
	case <-ctx.Done():
		srv.GracefulStop()
		err = <-served
	}
	log.Info("otlp sink stopped", "exports", sink.exports.Load(), "spans", sink.spans.Load())
	if err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		fmt.Fprintf(stderr, "bench otlp-sink: %v\n", err)
		return 1
	}
	return 0
}

// traceSink counts what it receives.
type traceSink struct {
	collectortrace.UnimplementedTraceServiceServer
	exports, spans atomic.Int64
}

func (s *traceSink) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	s.exports.Add(1)
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			s.spans.Add(int64(len(ss.GetSpans())))
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}
