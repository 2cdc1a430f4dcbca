package frontend

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/preprocessor"
	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

// Per-request log lines.
//
// At debug level (DYN_LOG=debug) each /v1 request writes two lines:
//
//   - "frontend: request admitted" once the frontend has accepted it for
//     a served model: its body decoded, its model found, within its
//     tenant's limit, and handed to the model's chain (preprocessing,
//     the admission queue, routing, a worker). A request the model's
//     queue then refuses ends with its 503; one refused before (bad
//     body, unknown model, tenant limit) has no admitted line, only its
//     end.
//   - "frontend: request ended" when its answer is complete (for a
//     stream that took its connection over, when the stream ends): the
//     HTTP status, the error_type of a failure, the finish reason, the
//     worker that served it, the prompt, cached and completion tokens,
//     TTFT, duration and migrations.
//
// With Config.AccessLog every HTTP request writes "frontend: access" at
// info level when it ends, as a proxy's access log does.
//
// The lines of a /v1 request are logged with its context, so a logger
// built with telemetry.LogHandler (obsflags.Logger) adds its trace_id,
// span_id (the frontend's server span) and x_request_id. When neither
// debug nor the access log is on, a request allocates and logs nothing
// more: serve makes no reqLog.

// reqLog is the per-request logging of one /v1 request; nil when off
// (its methods are then no-ops).
type reqLog struct {
	s      *Service
	ctx    context.Context // the request's span and id
	sw     *statusWriter   // the status and bytes sent
	start  time.Time
	debug  bool
	access bool
	// The request line, copied: net/http reuses the request of a stream
	// that took its connection over once the handler returns.
	method, path, remote, agent string

	endpoint string
	model    string
	stream   bool
	x        *exchange // once admitted
	refused  string    // error_type of a refusal before admission
	// migrations counts the request's re-issues (pipeline.WithMigrationCount).
	migrations atomic.Int32
}

// startReqLog returns the logging of a /v1 request whose response goes
// through sw, or nil when neither debug lines nor the access log are on.
// w is the writer the handler got: with the access log on, the request's
// line is written here and not by the middleware (accessLog).
func (s *Service) startReqLog(ctx context.Context, w http.ResponseWriter, r *http.Request, id, endpoint string, sw *statusWriter) *reqLog {
	debug := s.log.Enabled(ctx, slog.LevelDebug)
	if !debug && !s.cfg.AccessLog {
		return nil
	}
	l := &reqLog{s: s, sw: sw, start: time.Now(), debug: debug, access: s.cfg.AccessLog, endpoint: endpoint, model: UnknownModel}
	l.ctx = context.WithValue(ctx, telemetry.RequestIDKey{}, id)
	if l.access {
		l.method, l.path, l.remote, l.agent = r.Method, r.URL.Path, r.RemoteAddr, r.UserAgent()
		if aw := findAccessWriter(w); aw != nil {
			aw.served = true
		}
	}
	return l
}

// admitted records that x goes to its model's chain and writes the
// admitted line.
func (l *reqLog) admitted(x *exchange, stream bool) {
	if l == nil {
		return
	}
	l.x, l.model, l.stream = x, x.model, stream
	if l.debug {
		l.s.log.LogAttrs(l.ctx, slog.LevelDebug, "frontend: request admitted",
			slog.String("endpoint", l.endpoint), slog.String("model", l.model), slog.Bool("stream", stream))
	}
}

// refuse records a refusal before admission.
func (l *reqLog) refuse(model string, stream bool, e apiError) {
	if l == nil {
		return
	}
	l.model, l.stream, l.refused = model, stream, e.kind
}

// observe notes what the end line reports of one event: the finish
// reason, an embedding's prompt tokens.
func (l *reqLog) observe(x *exchange, ev preprocessor.Event) {
	if ev.Name != "" {
		return
	}
	switch c := ev.Data.(type) {
	case *openai.ChatCompletionChunk:
		for i := range c.Choices {
			if f := c.Choices[i].FinishReason; f != nil {
				x.finish = *f
			}
		}
	case *openai.Completion:
		for i := range c.Choices {
			if f := c.Choices[i].FinishReason; f != nil {
				x.finish = *f
			}
		}
	case *openai.EmbeddingResponse:
		if c != nil {
			x.promptTokens = c.Usage.PromptTokens
		}
	}
}

// end writes the end line and the access line.
func (l *reqLog) end() {
	if l == nil {
		return
	}
	d := time.Since(l.start)
	errType := l.refused
	x := l.x
	if x != nil {
		errType = x.errKind
	}
	status := l.sw.code
	if status == 0 {
		// Nothing was written: net/http answers 200 when the handler
		// returns, unless the client had gone (nginx's 499).
		status = http.StatusOK
		if errType == ErrCancelled {
			status = 499
		}
	}
	var prompt, completion int
	if x != nil {
		prompt, completion = x.promptTokens, x.completionTokens
	}
	if l.debug {
		attrs := make([]slog.Attr, 0, 16)
		attrs = append(attrs, slog.String("endpoint", l.endpoint), slog.String("model", l.model), slog.Bool("stream", l.stream),
			slog.Int("status", status))
		if errType != "" {
			attrs = append(attrs, slog.String("error", errType))
		}
		if x != nil {
			if x.finish != "" {
				attrs = append(attrs, slog.String("finish_reason", x.finish))
			}
			if p := x.placement; p != nil {
				attrs = append(attrs, slog.Uint64("worker", p.WorkerID))
				if p.PrefillWorkerID != nil {
					attrs = append(attrs, slog.Uint64("prefill_worker", *p.PrefillWorkerID))
				}
			}
		}
		attrs = append(attrs, slog.Int("prompt_tokens", prompt), slog.Int("completion_tokens", completion))
		if x != nil && x.cachedTokens >= 0 {
			attrs = append(attrs, slog.Int("cached_tokens", x.cachedTokens))
		}
		if x != nil && x.ttft > 0 {
			attrs = append(attrs, slog.Float64("ttft_ms", millis(x.ttft)))
		}
		attrs = append(attrs, slog.Float64("duration_ms", millis(d)), slog.Int("migrations", int(l.migrations.Load())))
		l.s.log.LogAttrs(l.ctx, slog.LevelDebug, "frontend: request ended", attrs...)
	}
	if l.access {
		l.s.logAccess(l.ctx, l.method, l.path, status, d, l.sw.bytes, l.remote, l.agent,
			slog.String("model", l.model), slog.Int("prompt_tokens", prompt), slog.Int("completion_tokens", completion))
	}
}

// logAccess writes one access line.
func (s *Service) logAccess(ctx context.Context, method, path string, status int, d time.Duration, bytes int64, remote, agent string, more ...slog.Attr) {
	attrs := make([]slog.Attr, 0, 10)
	attrs = append(attrs, slog.String("method", method), slog.String("path", path), slog.Int("status", status),
		slog.Float64("duration_ms", millis(d)), slog.Int64("bytes", bytes), slog.String("remote_addr", remote))
	if agent != "" {
		attrs = append(attrs, slog.String("user_agent", agent))
	}
	attrs = append(attrs, more...)
	s.log.LogAttrs(ctx, slog.LevelInfo, "frontend: access", attrs...)
}

// millis is d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 {
	return float64(d.Round(time.Microsecond)) / float64(time.Millisecond)
}

// accessLog is the middleware of Config.AccessLog: it writes the access
// line of every request that serve does not (serve writes those of the
// /v1 requests, with their ids, model and tokens, when they end, which
// for a stream that took its connection over is after its handler
// returned).
func (s *Service) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		aw := &accessWriter{statusWriter: statusWriter{ResponseWriter: w}}
		start := time.Now()
		next.ServeHTTP(aw, r)
		if aw.served {
			return
		}
		status := aw.code
		if status == 0 {
			status = http.StatusOK
		}
		s.logAccess(r.Context(), r.Method, r.URL.Path, status, time.Since(start), aw.bytes, r.RemoteAddr, r.UserAgent())
	})
}

// accessWriter is the access log's writer: a statusWriter that serve
// marks when it writes the request's line itself.
type accessWriter struct {
	statusWriter
	served bool
}

// findAccessWriter returns the access log's writer under w, if any.
func findAccessWriter(w http.ResponseWriter) *accessWriter {
	for {
		if aw, ok := w.(*accessWriter); ok {
			return aw
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return nil
		}
		w = u.Unwrap()
	}
}
