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
// Nothing is stored.
func (s *Service) handleResponses(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, EndpointResponses, s.decodeResponses)
}

func (s *Service) decodeResponses(body []byte) (apiRequest, error) {
	req, chat, err := openai.DecodeResponses(body, s.cfg.Decode)
	if err != nil {
		return nil, err
	}
	chat.StreamOptions = &openai.StreamOptions{IncludeUsage: true} // usage ends every answer
	x := &responsesRequest{req: req, chat: chat, clock: s.clock}
	x.format = responseStream{b: &x.b, clock: s.clock}
	return x, nil
}

// responsesRequest is one Responses API request, run as the chat request
// it translates to.
type responsesRequest struct {
	req   *openai.ResponsesRequest
	chat  *openai.ChatCompletionRequest
	clock func() time.Time
	// b builds the response from the chat chunks; made by run, once the
	// model (and its served name) is known.
	b      *openai.ResponseBuilder
	format responseStream
}

func (x *responsesRequest) target() requestTarget {
	return requestTarget{model: x.req.Model, stream: x.req.Stream, needs: modelcard.ModelChat, endpoint: EndpointResponses}
}

func (x *responsesRequest) run(ctx context.Context, m ServedModel, id string, emit func(preprocessor.Event) error) error {
	x.b = openai.NewResponseBuilder(id, x.req, m.Name(), x.clock())
	return m.Chat(ctx, id, x.chat, emit)
}

func (x *responsesRequest) fold() (func(preprocessor.Event) error, func() any) {
	return folder(func(c *openai.ChatCompletionChunk) { x.b.Add(c) }, func() any {
		x.b.Finish(x.clock())
		return x.b.Response()
	})
}

func (x *responsesRequest) streamFormat() streamFormat { return &x.format }

// responseStream writes a chat stream as the Responses API's named
// events: no [DONE], and a failure after the first event is a
// response.failed event.
type responseStream struct {
	b     **openai.ResponseBuilder
	clock func() time.Time
}

func (f *responseStream) add(ev preprocessor.Event) []sseEvent {
	c, ok := ev.Data.(*openai.ChatCompletionChunk)
	if !ok || ev.Name != "" {
		return nil
	}
	return responseEvents((*f.b).Add(c))
}

func (f *responseStream) finish() []sseEvent { return responseEvents((*f.b).Finish(f.clock())) }

func (f *responseStream) fail(e apiError) []sseEvent { return responseEvents((*f.b).Fail(e.message)) }

func responseEvents(evs []openai.ResponseEvent) []sseEvent {
	out := make([]sseEvent, len(evs))
	for i := range evs {
		out[i] = sseEvent{name: evs[i].Type, data: &evs[i]}
	}
	return out
}
