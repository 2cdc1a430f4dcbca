package frontend

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
	"github.com/dynamo-go/dynamo/pkg/preprocessor"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// EndpointResponses is the endpoint label of POST /v1/responses.
const EndpointResponses = "responses"

// handleResponses serves the OpenAI Responses API: the request is
// translated into a chat completions request (openai.DecodeResponses),
// run like one, and its chunks translated back (openai.ResponseBuilder):
// one response object, or the Responses event stream. Nothing is stored.
//
// It follows serve step for step; only the stream differs, since its
// events are named, it ends without [DONE], and a failure after the
// first event is a response.failed event.
func (s *Service) handleResponses(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	defer s.requests.Done()
	id := requestID(r)
	w.Header().Set("x-request-id", id)
	ctx, span := s.startServerSpan(r, id)
	sw := &statusWriter{ResponseWriter: w}
	defer endServerSpan(span, sw)
	w, r = sw, r.WithContext(ctx)

	body, err := s.readBody(w, r)
	var (
		req  *openai.ResponsesRequest
		chat *openai.ChatCompletionRequest
	)
	if err == nil {
		req, chat, err = openai.DecodeResponses(body, s.cfg.Decode)
	}
	if err != nil {
		s.refuse(w, r, id, UnknownModel, EndpointResponses, false, err)
		return
	}
	m := s.models.Lookup(req.Model)
	if m == nil || !m.Serves(modelcard.ModelChat) {
		s.refuse(w, r, id, UnknownModel, EndpointResponses, req.Stream, fmt.Errorf("%w: %s", ErrModelNotFound, req.Model))
		return
	}
	span.SetAttributes(attribute.String("model", m.Name()), attribute.Bool("stream", req.Stream))
	g := s.metrics.Start(m.Name(), EndpointResponses, req.Stream)
	defer g.Finish()

	rc := runtime.NewContext(r.Context(), id)
	defer rc.Release()
	x := &exchange{s: s, w: w, r: r, rc: rc, g: g, id: id, model: m.Name()}
	x.startTimer()
	defer x.stopTimer()

	chat.Model = m.Name()
	chat.StreamOptions = &openai.StreamOptions{IncludeUsage: true} // usage ends every answer
	b := openai.NewResponseBuilder(id, req, m.Name(), s.clock())
	run := func(ctx context.Context, m *pipeline.Model, id string, emit func(preprocessor.Event) error) error {
		return m.Preprocessor().Chat(ctx, id, chat, m, emit)
	}
	if req.Stream {
		x.streamResponse(m, run, b)
		return
	}
	x.unary(&call{
		run: run,
		fold: func() (func(preprocessor.Event) error, func() any) {
			return folder(func(c *openai.ChatCompletionChunk) { b.Add(c) }, func() any {
				b.Finish(s.clock())
				return b.Response()
			})
		},
	}, m)
}

// streamResponse runs the request and answers with the Responses event
// stream. As in stream, nothing is written until the first chunk, so a
// failure before it is a real HTTP error status; events are buffered and
// flushed when the runtime has delivered what it had.
func (x *exchange) streamResponse(m *pipeline.Model, run func(context.Context, *pipeline.Model, string, func(preprocessor.Event) error) error, b *openai.ResponseBuilder) {
	ctl := http.NewResponseController(x.w)
	var (
		mu        sync.Mutex // guards buf, the writer and the flags
		buf       = sseBuffers.get()
		committed bool
		broken    bool // a write failed: the client is gone
	)
	write := func(evs []openai.ResponseEvent) error {
		if buf == nil {
			buf = sseBuffers.get()
		}
		for i := range evs {
			if err := openai.WriteSSE(buf, evs[i].Type, &evs[i]); err != nil {
				return err
			}
		}
		return nil
	}
	flush := func() error {
		_ = ctl.SetWriteDeadline(time.Now().Add(x.s.cfg.WriteTimeout))
		_, err := x.w.Write(buf.Bytes())
		sseBuffers.put(buf)
		buf = nil
		if err != nil {
			return err
		}
		return ctl.Flush()
	}
	x.rc.OnStreamIdle(func() {
		mu.Lock()
		defer mu.Unlock()
		if broken || !committed || buf == nil || buf.Len() == 0 {
			return
		}
		if flush() != nil {
			broken = true
			x.clientGone.Store(true)
			x.rc.Kill()
		}
	})
	err := run(x.rc, m, x.id, func(ev preprocessor.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if broken {
			return errClientGone
		}
		x.observe(ev)
		c, ok := ev.Data.(*openai.ChatCompletionChunk)
		if !ok || ev.Name != "" {
			return nil
		}
		if !committed {
			startSSE(x.w)
			committed = true
		}
		return write(b.Add(c))
	})
	mu.Lock()
	defer mu.Unlock()
	defer func() { // under mu
		sseBuffers.put(buf)
		buf = nil
	}()
	if err != nil {
		e := x.failure(err)
		switch {
		case !committed:
			x.fail(e, false)
		case e.kind == ErrCancelled:
			x.fail(e, true) // the client is gone: metrics only
		default:
			x.g.Fail(e.kind)
			trace.SpanFromContext(x.rc).SetStatus(codes.Error, e.message)
			x.s.log.WarnContext(x.rc, "frontend: request failed", "request_id", x.id, "model", x.model, "status", e.status, "error", e.message, "streaming", true)
			if write(b.Fail(e.message)) == nil {
				_ = flush()
			}
		}
		return
	}
	if !committed {
		startSSE(x.w)
		committed = true
	}
	if write(b.Finish(x.s.clock())) != nil || broken || flush() != nil {
		x.g.Cancelled()
		return
	}
	x.g.OK()
}
