package testenv

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // accept gzip-compressed exports (OTEL_EXPORTER_OTLP_COMPRESSION=gzip)
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
)

// maxOTLPBody bounds the body of one OTLP/HTTP export, after gzip.
const maxOTLPBody = 64 << 20

// OTLP is an in-process OTLP trace receiver listening on 127.0.0.1: a
// gRPC server of the collector's TraceService and an OTLP/HTTP server of
// POST /v1/traces. Both store what they receive, flattened into Spans.
// Start it with StartOTLP; it is safe for concurrent use.
type OTLP struct {
	grpcAddr, httpAddr string

	mu    sync.Mutex
	spans []Span
}

// StartOTLP starts an OTLP receiver, gRPC and HTTP each on a port the
// kernel picks. Both servers are stopped when the test ends.
//
// Point an OpenTelemetry SDK exporter at it with GRPCEndpoint (for
// otlptracegrpc, with an insecure connection) or HTTPEndpoint (for
// otlptracehttp, or as OTEL_EXPORTER_OTLP_ENDPOINT).
func StartOTLP(t testing.TB) *OTLP {
	t.Helper()
	o := &OTLP{}

	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: otlp grpc listen: %v", err)
	}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		gl.Close()
		t.Fatalf("testenv: otlp http listen: %v", err)
	}
	o.grpcAddr, o.httpAddr = gl.Addr().String(), hl.Addr().String()

	gs := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(gs, &otlpTraceService{o: o})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", o.serveHTTP)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := gs.Serve(gl); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			t.Errorf("testenv: otlp grpc server: %v", err)
		}
	}()
	go func() {
		defer wg.Done()
		if err := hs.Serve(hl); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("testenv: otlp http server: %v", err)
		}
	}()
	t.Cleanup(func() {
		gs.Stop()
		_ = hs.Close()
		wg.Wait()
	})
	return o
}

// GRPCEndpoint returns the gRPC receiver's address, "127.0.0.1:port"
// (otlptracegrpc.WithEndpoint; it serves plain text, so add WithInsecure,
// or give OTEL_EXPORTER_OTLP_ENDPOINT as "http://" + GRPCEndpoint()).
func (o *OTLP) GRPCEndpoint() string { return o.grpcAddr }

// HTTPEndpoint returns the OTLP/HTTP receiver's base URL,
// "http://127.0.0.1:port": an exporter given it as
// OTEL_EXPORTER_OTLP_ENDPOINT posts to HTTPEndpoint() + "/v1/traces".
func (o *OTLP) HTTPEndpoint() string { return "http://" + o.httpAddr }

// Spans returns a copy of every span received so far, in order of arrival.
func (o *OTLP) Spans() []Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Span(nil), o.spans...)
}

// ByName returns the spans received so far named name.
func (o *OTLP) ByName(name string) []Span { return Named(o.Spans(), name) }

// Reset forgets the spans received so far.
func (o *OTLP) Reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.spans = nil
}

// WaitFor polls the received spans every 10 ms until cond holds for them,
// and returns them. When it does not within d, it fails the test with a
// dump of every span received.
func (o *OTLP) WaitFor(t testing.TB, d time.Duration, cond func([]Span) bool) []Span {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		spans := o.Spans()
		if cond(spans) {
			return spans
		}
		if time.Now().After(deadline) {
			t.Fatalf("testenv: timed out after %s waiting for spans; received %d:\n%s", d, len(spans), DumpSpans(spans))
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// add stores the spans of one export request.
func (o *OTLP) add(req *collectortrace.ExportTraceServiceRequest) {
	spans := flatten(req)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.spans = append(o.spans, spans...)
}

// otlpTraceService is the gRPC TraceService of an OTLP receiver.
type otlpTraceService struct {
	collectortrace.UnimplementedTraceServiceServer
	o *OTLP
}

// Export stores the spans of req.
func (s *otlpTraceService) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	s.o.add(req)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// Content types of OTLP/HTTP.
const (
	contentProtobuf = "application/x-protobuf"
	contentJSON     = "application/json"
)

// serveHTTP is POST /v1/traces: an ExportTraceServiceRequest in binary
// protobuf or in OTLP/JSON, optionally gzip-compressed; the answer is an
// empty ExportTraceServiceResponse in the same encoding.
func (o *OTLP) serveHTTP(w http.ResponseWriter, r *http.Request) {
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || (ct != contentProtobuf && ct != contentJSON) {
		http.Error(w, fmt.Sprintf("unsupported content type %q: want %s or %s", r.Header.Get("Content-Type"), contentProtobuf, contentJSON), http.StatusUnsupportedMediaType)
		return
	}
	var body io.Reader = http.MaxBytesReader(w, r.Body, maxOTLPBody)
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(body)
		if err != nil {
			http.Error(w, "bad gzip body: "+err.Error(), http.StatusBadRequest)
			return
		}
		defer zr.Close()
		body = io.LimitReader(zr, maxOTLPBody+1)
	default:
		http.Error(w, fmt.Sprintf("unsupported content encoding %q", enc), http.StatusUnsupportedMediaType)
		return
	}
	raw, err := io.ReadAll(body)
	if err == nil && len(raw) > maxOTLPBody {
		err = fmt.Errorf("body larger than %d bytes", maxOTLPBody)
	}
	if err != nil {
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	req := &collectortrace.ExportTraceServiceRequest{}
	if ct == contentJSON {
		err = unmarshalOTLPJSON(raw, req)
	} else {
		err = proto.Unmarshal(raw, req)
	}
	if err != nil {
		http.Error(w, "decoding the export request: "+err.Error(), http.StatusBadRequest)
		return
	}
	o.add(req)

	resp := &collectortrace.ExportTraceServiceResponse{}
	var out []byte
	if ct == contentJSON {
		out, err = protojson.Marshal(resp)
	} else {
		out, err = proto.Marshal(resp)
	}
	if err != nil {
		http.Error(w, "encoding the response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", ct)
	_, _ = w.Write(out)
}

// DumpSpans formats spans one per line, ordered by start time, for a test
// failure message.
func DumpSpans(spans []Span) string {
	sorted := append([]Span(nil), spans...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Start.Before(sorted[j].Start) })
	var b strings.Builder
	for _, s := range sorted {
		b.WriteString("  ")
		b.WriteString(s.String())
		b.WriteByte('\n')
	}
	return b.String()
}
