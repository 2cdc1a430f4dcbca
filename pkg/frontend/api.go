package frontend

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/dynamo-go/dynamo/pkg/admission"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
	"github.com/dynamo-go/dynamo/pkg/preprocessor"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// apiRequest is one decoded /v1 request of an endpoint: chatRequest
// (chat.go), completionRequest (completions.go), embeddingRequest
// (embeddings.go), responsesRequest (responses.go), messagesRequest
// (messages.go). serve resolves its model and runs it: stream, unary or
// query.
type apiRequest interface {
	// target is the model the client asked for and how to answer.
	target() requestTarget
	// run streams the request's events through m.
	run(ctx context.Context, m ServedModel, id string, emit func(preprocessor.Event) error) error
	// fold returns an emit that folds the events into the unary answer,
	// and the function that returns that answer.
	fold() (emit func(preprocessor.Event) error, result func() any)
	// streamFormat writes the stream of an endpoint whose events are not
	// chat's and completions' chunks (the Responses and Messages APIs);
	// nil: the chunks as they are, then data: [DONE].
	streamFormat() streamFormat
}

// preparedRequest is a request that can say where it would be routed
// without running (the query_instance_id annotation): chat and
// completions.
type preparedRequest interface {
	prepare(m ServedModel) (*preprocessor.Prepared, error)
}

// requestTarget is what serve needs to know of a request before it runs.
type requestTarget struct {
	model    string // the name the client asked for
	stream   bool
	needs    modelcard.ModelType // the model type the endpoint needs
	endpoint string              // metrics label
	// queryOnly: the client asks where the request would go, not for an
	// answer (nvext.annotations query_instance_id).
	queryOnly bool
	// wantWorker: the client asks for the serving worker in the response's
	// nvext (nvext.extra_fields worker_id).
	wantWorker bool
}

// streamFormat turns a request's events into the events of its stream.
type streamFormat interface {
	// add returns what to write for one event of the chain (none: nil).
	add(ev preprocessor.Event) []sseEvent
	// finish returns the events that end a stream that succeeded.
	finish() []sseEvent
	// fail returns the events that end a stream that failed after it
	// started with e.
	fail(e apiError) []sseEvent
}

// sseEvent is one server-sent event: "event: name" (when set) and the
// data as JSON.
type sseEvent struct {
	name string
	data any
}

// routingAsks reads the routing-related nvext asks.
func routingAsks(nv *openai.NvExt) (queryOnly, wantWorker bool) {
	if nv == nil {
		return false, false
	}
	for _, a := range nv.Annotations {
		if a == openai.AnnotationQueryInstanceID || strings.HasPrefix(a, openai.AnnotationQueryInstanceID+":") {
			queryOnly = true
		}
	}
	for _, f := range nv.ExtraFields {
		if f == "worker_id" {
			wantWorker = true
		}
	}
	return queryOnly, wantWorker
}

// includeUsage turns stream_options.include_usage on where the answer
// always carries usage: unary requests, and every request with
// DYN_ENABLE_FORCE_INCLUDE_USAGE.
func (s *Service) includeUsage(stream bool, so **openai.StreamOptions) {
	if stream && !s.cfg.ForceIncludeUsage {
		return
	}
	if *so == nil {
		*so = &openai.StreamOptions{}
	}
	(*so).IncludeUsage = true
}

// folder returns an emit that feeds the chunks of type C to add, and the
// function returning the folded response.
func folder[C any](add func(C), result func() any) (func(preprocessor.Event) error, func() any) {
	return func(ev preprocessor.Event) error {
		if c, ok := ev.Data.(C); ok && ev.Name == "" {
			add(c)
		}
		return nil
	}, result
}

// serve runs one /v1 request: read and decode the body, resolve the model,
// account for it in the metrics, run it, and answer with SSE or JSON.
func (s *Service) serve(w http.ResponseWriter, r *http.Request, endpoint string, decode func([]byte) (apiRequest, error)) {
	// cleanup runs when the handler returns, unless the request's stream
	// took the connection over: then when the stream ends (detach.go).
	var cleanup reqCleanup
	handed := false
	defer func() {
		if !handed {
			cleanup.run()
		}
	}()
	s.requests.Add(1)
	cleanup.push(s.requests.Done)
	id := requestID(r)
	w.Header().Set("x-request-id", id)
	ctx, span := s.startServerSpan(r, id)
	sw := &statusWriter{ResponseWriter: w}
	cleanup.push(func() { endServerSpan(span, sw) })
	// The end line (and access line) when the request is over (reqlog.go).
	lr := s.startReqLog(ctx, w, r, id, endpoint, sw)
	if lr != nil {
		cleanup.push(lr.end)
	}
	w, r = sw, r.WithContext(ctx)

	body, err := s.readBody(w, r)
	var req apiRequest
	if err == nil {
		req, err = decode(body)
	}
	if err == nil {
		err = withSession(r, req)
	}
	if err != nil {
		lr.refuse(UnknownModel, false, s.refuse(w, r, id, UnknownModel, endpoint, false, err))
		return
	}
	c := req.target()
	m := s.lookupModel(r.Context(), c.model)
	if m == nil || !m.Serves(c.needs) {
		lr.refuse(UnknownModel, c.stream, s.refuse(w, r, id, UnknownModel, endpoint, c.stream, s.modelNotFound(c.model, c.needs)))
		return
	}
	if x, ok := req.(*responsesRequest); ok && x.inBackground() {
		// Answered at once; the run is the service's (responses_background.go).
		if e := s.startBackground(w, r, id, x, m); e.status != 0 {
			lr.refuse(m.Name(), false, e)
		}
		return
	}
	release, err := s.tenants.acquire(s.tenants.tenantOf(r, len(s.cfg.APIKeys) > 0))
	if err != nil {
		lr.refuse(m.Name(), c.stream, s.refuseTenant(w, r, id, m, endpoint, c.stream, err))
		return
	}
	cleanup.push(release)
	span.SetAttributes(attribute.String("model", m.Name()), attribute.Bool("stream", c.stream))
	g := s.metrics.Start(m.Name(), endpoint, c.stream)
	cleanup.push(g.Finish)

	x := &exchange{s: s, w: w, r: r, g: g, id: id, model: m.Name(), endpoint: endpoint, format: req.streamFormat(), shape: shapeOf(r), lr: lr, cachedTokens: -1}
	detach := false
	if c.stream {
		n := s.streams.Add(1)
		cleanup.push(func() { s.streams.Add(-1) })
		detach = !c.queryOnly && x.detachable(r, n)
	}
	parent := r.Context()
	if detach {
		// The request outlives its handler: the client leaving is told
		// by the stream's watcher instead (detach.go).
		parent = context.WithoutCancel(parent)
	}
	if lr != nil && lr.debug {
		parent = pipeline.WithMigrationCount(parent, &lr.migrations)
	}
	rc := runtime.NewContext(parent, id)
	cleanup.push(rc.Release)
	x.rc = rc
	lr.admitted(x, c.stream)
	x.startTimer()
	cleanup.push(x.stopTimer)
	x.wantWorker = c.wantWorker
	switch {
	case c.queryOnly:
		x.query(req, c.stream, m)
	case detach && x.detach(r, func() {
		x.clientGone.Store(true)
		rc.Kill()
	}):
		handed = true
		x.r = nil // net/http reuses it once the handler returns
		go x.runDetached(req, m, cleanup)
	case c.stream:
		x.stream(req, m)
	default:
		x.unary(req, m)
	}
}

// refuse answers a request that failed before reaching a model, and
// returns the answer.
func (s *Service) refuse(w http.ResponseWriter, r *http.Request, id, model, endpoint string, stream bool, err error) apiError {
	g := s.metrics.Start(model, endpoint, stream)
	defer g.Finish()
	e := shapeOf(r).adapt(s.classify(err))
	g.Fail(e.kind)
	if e.kind == ErrOverload {
		s.metrics.Rejected(model, endpoint)
	}
	s.reject(w, r, id, e)
	return e
}

// refuseTenant answers a request of model m refused by its tenant's
// limit, counted with the model's queue refusals (reason tenant_limit).
// Its Retry-After is when the tenant's oldest request is expected to
// end, or the queue's wait estimate when the tenant's requests have no
// duration to go by yet.
func (s *Service) refuseTenant(w http.ResponseWriter, r *http.Request, id string, m ServedModel, endpoint string, stream bool, err error) apiError {
	queueEstimate := m.CountRefusal(admission.ReasonTenantLimit)
	var tl *tenantLimitError
	if errors.As(err, &tl) && tl.retryAfter == 0 {
		tl.retryAfter = queueEstimate
	}
	return s.refuse(w, r, id, m.Name(), endpoint, stream, err)
}

// reject logs a refused request once and writes its error body.
func (s *Service) reject(w http.ResponseWriter, r *http.Request, id string, e apiError) {
	args := []any{"request_id", id, "path", r.URL.Path, "status", e.status, "error", e.message}
	if isRefusal(e) {
		s.refusals.log(r.Context(), s.log, slog.LevelInfo, e, "", "frontend: request refused", args...)
	} else {
		s.log.InfoContext(r.Context(), "frontend: request refused", args...)
	}
	writeError(w, shapeOf(r), e)
}

// readBody reads the request body within the size limit and the body
// read timeout.
func (s *Service) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(s.cfg.BodyReadTimeout))
	defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.BodyLimit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, &openai.ValidationError{Message: "Validation: cannot read the request body: " + err.Error()}
	}
	return b, nil
}

// exchange is one request being answered.
type exchange struct {
	s        *Service
	w        http.ResponseWriter
	r        *http.Request
	rc       *runtime.Context
	g        *Guard
	id       string
	model    string
	endpoint string

	timer      *time.Timer
	timedOut   atomic.Bool
	clientGone atomic.Bool
	firstToken bool
	cached     bool
	// detached is the connection of a stream that took it over from
	// net/http (detach.go); nil otherwise.
	detached   *detachedStream
	wantWorker bool
	format     streamFormat // the call's; nil for chunks and [DONE]
	shape      errorShape   // the route's error body
	// placement is where the latest output came from (nvext worker_id).
	placement *backend.Placement

	// What the end line reports (reqlog.go). The counts and errKind are
	// kept whether or not it is on; the rest only when lr is set.
	lr                             *reqLog // nil: no per-request lines
	promptTokens, completionTokens int
	cachedTokens                   int           // -1: not known
	ttft                           time.Duration // 0: no token yet
	finish                         string        // the latest finish reason
	errKind                        string        // error_type of a failure
}

// startTimer arms the stream inactivity timeout, if configured.
func (x *exchange) startTimer() {
	if d := x.s.cfg.StreamTimeout; d > 0 {
		x.timer = time.AfterFunc(d, func() {
			x.timedOut.Store(true)
			x.rc.Kill()
		})
	}
}

func (x *exchange) touch() {
	if x.timer != nil {
		x.timer.Reset(x.s.cfg.StreamTimeout)
	}
}

func (x *exchange) stopTimer() {
	if x.timer != nil {
		x.timer.Stop()
	}
}

// observe feeds a chunk's stats to the metrics and the end line.
func (x *exchange) observe(ev preprocessor.Event) {
	x.touch()
	if x.lr != nil {
		x.lr.observe(x, ev)
	}
	st := ev.Stats
	if st == nil {
		return
	}
	if st.Placement != nil {
		x.placement = st.Placement
	}
	x.promptTokens = st.PromptTokens
	if st.Tokens > 0 {
		x.completionTokens += st.Tokens
		if !x.firstToken {
			x.firstToken = true
			x.g.FirstToken(st.PromptTokens)
			if x.lr != nil {
				x.ttft = time.Since(x.lr.start)
			}
		}
		x.g.Chunk(st.Tokens)
	}
	if st.CachedTokens != nil {
		x.cachedTokens = *st.CachedTokens
		if !x.cached {
			x.cached = true
			x.g.Cached(*st.CachedTokens)
		}
	}
}

// cancelled records that the client went away while its answer was
// written.
func (x *exchange) cancelled() {
	x.errKind = ErrCancelled
	x.g.Cancelled()
}

// failure turns a run error into what the client and the metrics see.
func (x *exchange) failure(err error) apiError {
	switch {
	case x.timedOut.Load():
		err = errStreamTimeout
	case x.clientGone.Load() || x.r != nil && x.r.Context().Err() != nil:
		err = errClientGone
	}
	return x.shape.adapt(x.s.classify(err))
}

// unary runs the request and answers with one JSON body.
func (x *exchange) unary(req apiRequest, m ServedModel) {
	emit, result := req.fold()
	err := req.run(x.rc, m, x.id, func(ev preprocessor.Event) error {
		x.observe(ev)
		return emit(ev)
	})
	if err != nil {
		x.fail(x.failure(err), false)
		return
	}
	res := result()
	x.attachWorker(res)
	writeJSON(x.w, http.StatusOK, res)
	x.g.OK()
}

// fail records and reports an error; committed says whether the SSE
// stream already started.
func (x *exchange) fail(e apiError, committed bool) {
	x.errKind = e.kind
	if e.kind == ErrCancelled {
		x.g.Cancelled()
		x.s.log.InfoContext(x.rc, "frontend: client disconnected; request killed", "request_id", x.id, "model", x.model)
		return
	}
	x.g.Fail(e.kind)
	if e.kind == ErrOverload {
		x.s.metrics.Rejected(x.model, x.endpoint)
	}
	if committed || e.status >= 500 {
		trace.SpanFromContext(x.rc).SetStatus(codes.Error, e.message)
	}
	args := []any{"request_id", x.id, "model", x.model, "status", e.status, "error", e.message, "streaming", committed}
	if isRefusal(e) {
		x.s.refusals.log(x.rc, x.s.log, slog.LevelWarn, e, x.model, "frontend: request refused", args...)
	} else {
		x.s.log.WarnContext(x.rc, "frontend: request failed", args...)
	}
	if committed {
		if x.format != nil {
			for _, ev := range x.format.fail(e) {
				_ = openai.WriteSSE(x.w, ev.name, ev.data)
			}
		} else {
			_ = openai.WriteSSEError(x.w, e.body())
		}
		_ = http.NewResponseController(x.w).Flush()
		return
	}
	writeError(x.w, x.shape, e)
}
