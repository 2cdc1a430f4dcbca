package worker

import (
	"context"
	"errors"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

// engineSpan is a request's engine.generate span and what it records.
// With the span not recording (export off), only the link on the first
// output is kept: no per-token time is taken.
type engineSpan struct {
	span      trace.Span
	recording bool
	start     time.Time
	first     time.Time // first token
	last      time.Time // latest token
	tokens    int
	itl       []float64 // ms between tokens (a multi-token output counts each token)
	finish    *backend.FinishReason
	linkSent  bool
}

// startEngineSpan opens the engine span of req under ctx's span (the
// runtime's handling span), linked to the engine span of the attempt req
// continues, if any.
func (w *server) startEngineSpan(ctx context.Context, req *backend.Request) (context.Context, *engineSpan) {
	attrs := []attribute.KeyValue{
		attribute.String("model", req.Model),
		attribute.Int("input_tokens", len(req.TokenIDs)),
		attribute.String("disagg_role", w.cfg.DisaggregationMode),
	}
	opts := []trace.SpanStartOption{trace.WithAttributes(attrs...)}
	if l := req.MigrationLink; l != nil {
		if link, ok := l.OTel(); ok {
			opts = append(opts, trace.WithLinks(link), trace.WithAttributes(
				attribute.String("migration_trace_id", l.TraceID), attribute.String("migration_span_id", l.SpanID)))
		}
	}
	ctx, span := w.tracer.Start(ctx, "engine.generate", opts...)
	return ctx, &engineSpan{span: span, recording: span.IsRecording(), start: time.Now()}
}

// output notes one output on its way to the caller; the first carries the
// link to this span (worker_trace_link).
func (s *engineSpan) output(o *backend.Output) {
	if !s.linkSent {
		s.linkSent = true
		o.WorkerTraceLink = telemetry.LinkOf(s.span.SpanContext())
	}
	if o.FinishReason != nil {
		s.finish = o.FinishReason
	}
	n := len(o.TokenIDs)
	if !s.recording || n == 0 {
		s.tokens += n
		return
	}
	now := time.Now()
	if s.tokens == 0 {
		s.first = now
	} else {
		gap := float64(now.Sub(s.last)) / float64(time.Millisecond) / float64(n)
		for range n {
			s.itl = append(s.itl, gap)
		}
	}
	s.last = now
	s.tokens += n
}

// end records the outcome and ends the span.
func (s *engineSpan) end(rc *runtime.Context, err error) {
	defer s.span.End()
	if !s.recording {
		return
	}
	cancelled := rc.IsStopped() || (s.finish != nil && s.finish.Kind == backend.FinishCancelled)
	attrs := []attribute.KeyValue{attribute.Int("output_tokens", s.tokens), attribute.Bool("cancelled", cancelled)}
	if s.finish != nil {
		attrs = append(attrs, attribute.String("finish_reason", string(s.finish.Kind)))
	}
	if s.tokens > 0 {
		attrs = append(attrs, attribute.Float64("ttft_ms", ms(s.first.Sub(s.start))))
	}
	if len(s.itl) > 0 {
		slices.Sort(s.itl)
		attrs = append(attrs,
			attribute.Float64("avg_itl_ms", ms(s.last.Sub(s.first))/float64(len(s.itl))),
			attribute.Float64("itl_p50_ms", quantile(s.itl, 0.50)),
			attribute.Float64("itl_p99_ms", quantile(s.itl, 0.99)),
			attribute.Float64("itl_max_ms", s.itl[len(s.itl)-1]))
	}
	if kind := errorKind(err, s.finish); kind != "" {
		attrs = append(attrs, attribute.String("error_kind", kind))
		msg := kind
		if err != nil {
			msg = err.Error()
		}
		s.span.SetStatus(codes.Error, msg)
	}
	s.span.SetAttributes(attrs...)
}

// errorKind names a failed request's error: the runtime error type of
// err, "unknown" for any other error, the error finish reason's, or ""
// when nothing failed.
func errorKind(err error, finish *backend.FinishReason) string {
	if err != nil {
		var re *runtime.Error
		if errors.As(err, &re) && re.Type != "" {
			return string(re.Type)
		}
		return "unknown"
	}
	if finish != nil && finish.Kind == backend.FinishError {
		return "engine_error"
	}
	return ""
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// quantile returns the q-quantile of sorted (nearest rank).
func quantile(sorted []float64, q float64) float64 {
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
