package frontend

import (
	"context"
	"net/http"
	"time"

	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/preprocessor"
)

// EndpointResponses is the endpoint label of POST /v1/responses.
const EndpointResponses = "responses"

// handleResponses serves the OpenAI Responses API: the request is
// translated into a chat completions request (openai.DecodeResponses),
// run like one, and its chunks translated back (openai.ResponseBuilder):
// one response object, or the Responses event stream (responseStream).
// With a store (Deps.ResponseStore) the response is kept with its input
// items (responses_store.go), a previous_response_id's conversation is
// prepended to the input, and a background request answers at once and
// runs on (responses_background.go).
func (s *Service) handleResponses(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, EndpointResponses, func(body []byte) (apiRequest, error) { return s.decodeResponses(r.Context(), body) })
}

func (s *Service) decodeResponses(ctx context.Context, body []byte) (apiRequest, error) {
	req, err := openai.DecodeResponsesRequest(body, s.cfg.Decode)
	if err != nil {
		return nil, err
	}
	if req.InBackground() && req.Stream {
		return nil, &openai.ValidationError{Param: "stream", Message: "Validation: a background response is not streamed here: poll it with GET /v1/responses/{id}"}
	}
	turn, conversation, err := s.prepareStored(ctx, req)
	if err != nil {
		return nil, err
	}
	chat, err := req.ToChat()
	if err != nil {
		return nil, err
	}
	chat.StreamOptions = &openai.StreamOptions{IncludeUsage: true} // usage ends every answer
	x := &responsesRequest{s: s, req: req, chat: chat, clock: s.clock, turn: turn, conv: conversation}
	x.format = responseStream{x: x}
	return x, nil
}

// responsesRequest is one Responses API request, run as the chat request
// it translates to.
type responsesRequest struct {
	s     *Service
	req   *openai.ResponsesRequest
	chat  *openai.ChatCompletionRequest
	clock func() time.Time
	// b builds the response from the chat chunks; made by run, once the
	// model (and its served name) is known.
	b      *openai.ResponseBuilder
	format responseStream
	// turn is what is stored with the response; nil: it is not stored.
	turn *storedTurn
	// conv is the stored conversation the request belongs to ("": none):
	// its session when the client names none (session.go).
	conv string
	// Set by run for the stored write: the run's context and request id,
	// and the worker that served the answer (0: none yet).
	ctx      context.Context
	id       string
	workerID uint64
}

func (x *responsesRequest) target() requestTarget {
	return requestTarget{model: x.req.Model, stream: x.req.Stream, needs: modelcard.ModelChat, endpoint: EndpointResponses}
}

func (x *responsesRequest) run(ctx context.Context, m ServedModel, id string, emit func(preprocessor.Event) error) error {
	x.b = openai.NewResponseBuilder(id, x.req, m.Name(), x.clock())
	x.ctx, x.id = ctx, id
	return m.Chat(ctx, id, x.chat, func(ev preprocessor.Event) error {
		if st := ev.Stats; st != nil && st.Placement != nil {
			x.workerID = st.Placement.WorkerID
		}
		return emit(ev)
	})
}

func (x *responsesRequest) fold() (func(preprocessor.Event) error, func() any) {
	return folder(func(c *openai.ChatCompletionChunk) { x.b.Add(c) }, func() any {
		x.b.Finish(x.clock())
		r := x.b.Response()
		x.stored(r)
		return r
	})
}

// stored writes r to the store if the request is stored. It returns
// when the write is done or failed: a failure is logged once and
// counted, and changes nothing for the client, who has the answer.
func (x *responsesRequest) stored(r *openai.Response) {
	if x.turn == nil {
		return
	}
	if err := x.s.putResponse(x.ctx, r, x.turn, x.workerID); err != nil {
		x.s.metrics.StoreError(storeOpPut)
		x.s.log.WarnContext(x.ctx, "frontend: response not stored", "request_id", x.id, "response_id", r.ID, "status", r.Status, "error", err)
	}
}

func (x *responsesRequest) inBackground() bool { return x.req.InBackground() }

func (x *responsesRequest) streamFormat() streamFormat { return &x.format }

// responseStream writes a chat stream as the Responses API's named
// events: no [DONE], and a failure after the first event is a
// response.failed event. A stored response is written when the model's
// stream has ended, before the terminal event (response.completed,
// .incomplete, .failed) is sent: the answer is all out, and a client
// that continues the conversation the moment it reads that event finds
// the response stored.
type responseStream struct {
	x *responsesRequest
}

func (f *responseStream) add(ev preprocessor.Event) []sseEvent {
	if ev.Name != "" {
		// An annotation nvext asked for, as chat streams send it.
		return []sseEvent{{name: ev.Name, data: ev.Data}}
	}
	c, ok := ev.Data.(*openai.ChatCompletionChunk)
	if !ok {
		return nil
	}
	return responseEvents(f.x.b.Add(c))
}

func (f *responseStream) finish() []sseEvent {
	evs := f.x.b.Finish(f.x.clock())
	f.x.stored(f.x.b.Response())
	return responseEvents(evs)
}

func (f *responseStream) fail(e apiError) []sseEvent {
	evs := f.x.b.Fail(e.message)
	f.x.stored(f.x.b.Response())
	return responseEvents(evs)
}

func responseEvents(evs []openai.ResponseEvent) []sseEvent {
	out := make([]sseEvent, len(evs))
	for i := range evs {
		out[i] = sseEvent{name: evs[i].Type, data: &evs[i]}
	}
	return out
}
