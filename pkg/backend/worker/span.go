package worker

import (
	"context"
	"errors"
	"log/slog"
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
// output is kept: no per-token time is taken (but the first token's,
// for the debug end line, when that is on).
type engineSpan struct {
	span      trace.Span
	recording bool
	timed     bool // take the first token's time: recording, or the end line is on
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
	var opts []trace.SpanStartOption
	l := req.MigrationLink
	link, linked := l.OTel()
	if linked {
		opts = append(opts, trace.WithLinks(link))
	}
	ctx, span := w.tracer.Start(ctx, "engine.generate", opts...)
	rec := span.IsRecording()
	if rec { // a span the caller does not sample records nothing: no attributes to build
		span.SetAttributes(
			attribute.String("model", req.Model),
			attribute.Int("input_tokens", len(req.TokenIDs)),
			attribute.String("disagg_role", w.cfg.DisaggregationMode))
		if linked {
			span.SetAttributes(attribute.String("migration_trace_id", l.TraceID), attribute.String("migration_span_id", l.SpanID))
		}
	}
	return ctx, &engineSpan{span: span, recording: rec, timed: rec || w.log.Enabled(ctx, slog.LevelDebug), start: time.Now()}
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
	if !s.timed || n == 0 {
		s.tokens += n
		return
	}
	now := time.Now()
	if s.tokens == 0 {
		s.first = now
	} else if s.recording {
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

// logEnd writes the request's end line at debug level, with ctx (the
// engine span's, on the request's Context): trace_id and span_id of the
// engine.generate span, and x_request_id, the id the frontend gave the
// request (it travels as the runtime Context's id). Call it after end.
func (w *server) logEnd(ctx context.Context, rc *runtime.Context, req *backend.Request, s *engineSpan, err error) {
	if !w.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	attrs := make([]slog.Attr, 0, 14)
	attrs = append(attrs, slog.String("model", req.Model), slog.Int("prompt_tokens", len(req.TokenIDs)))
	if req.MigratedTokens > 0 {
		attrs = append(attrs, slog.Int("migrated_tokens", req.MigratedTokens))
	}
	attrs = append(attrs, slog.Int("completion_tokens", s.tokens))
	if s.finish != nil {
		attrs = append(attrs, slog.String("finish_reason", string(s.finish.Kind)))
	}
	if s.tokens > 0 && !s.first.IsZero() {
		attrs = append(attrs, slog.Float64("ttft_ms", ms(s.first.Sub(s.start).Round(time.Microsecond))))
	}
	killed := rc.IsKilled()
	attrs = append(attrs, slog.Float64("duration_ms", ms(time.Since(s.start).Round(time.Microsecond))),
		slog.Bool("stopped", rc.IsStopped() && !killed), slog.Bool("killed", killed))
	if kind := errorKind(err, s.finish); kind != "" {
		attrs = append(attrs, slog.String("error_kind", kind))
		if err != nil {
			attrs = append(attrs, slog.String("error", err.Error()))
		}
	}
	if w.cfg.DisaggregationMode != "" && w.cfg.DisaggregationMode != ModeAggregated {
		attrs = append(attrs, slog.String("disagg_role", w.cfg.DisaggregationMode))
	}
	w.log.LogAttrs(ctx, slog.LevelDebug, "worker: request ended", attrs...)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// quantile returns the q-quantile of sorted (nearest rank).
func quantile(sorted []float64, q float64) float64 {
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
