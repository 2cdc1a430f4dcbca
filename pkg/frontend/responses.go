package frontend

import (
	"context"
	"net/http"
	"time"

	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
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
	s.serve(w, r, EndpointResponses, func(body []byte) (*call, error) {
		req, chat, err := openai.DecodeResponses(body, s.cfg.Decode)
		if err != nil {
			return nil, err
		}
		chat.StreamOptions = &openai.StreamOptions{IncludeUsage: true} // usage ends every answer
		var b *openai.ResponseBuilder                                  // made once the model is known; run comes first
		return &call{
			model: req.Model, stream: req.Stream, needs: modelcard.ModelChat, endpoint: EndpointResponses,
			run: func(ctx context.Context, m *pipeline.Model, id string, emit func(preprocessor.Event) error) error {
				chat.Model = m.Name()
				b = openai.NewResponseBuilder(id, req, m.Name(), s.clock())
				return m.Preprocessor().Chat(ctx, id, chat, m, emit)
			},
			fold: func() (func(preprocessor.Event) error, func() any) {
				return folder(func(c *openai.ChatCompletionChunk) { b.Add(c) }, func() any {
					b.Finish(s.clock())
					return b.Response()
				})
			},
			format: &responseStream{b: &b, clock: s.clock},
		}, nil
	})
}

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

func (f *responseStream) fail(msg string) []sseEvent { return responseEvents((*f.b).Fail(msg)) }

func responseEvents(evs []openai.ResponseEvent) []sseEvent {
	out := make([]sseEvent, len(evs))
	for i := range evs {
		out[i] = sseEvent{name: evs[i].Type, data: &evs[i]}
	}
	return out
}
