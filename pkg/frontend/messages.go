package frontend

import (
	"context"
	"net/http"

	"github.com/dynamo-go/dynamo/pkg/anthropic"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/preprocessor"
)

// EndpointMessages is the endpoint label of POST /v1/messages.
const EndpointMessages = "messages"

// handleMessages serves Anthropic's Messages API: the request is
// translated into a chat completions request (anthropic.Decode), run
// like one, and its chunks translated back (anthropic.Builder): one
// message, or the Messages event stream (messageStream). Its errors are
// in Anthropic's shape (errorShape).
func (s *Service) handleMessages(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, EndpointMessages, s.decodeMessages)
}

func (s *Service) decodeMessages(body []byte) (apiRequest, error) {
	req, chat, err := anthropic.Decode(body, s.anthropicDecodeOptions())
	if err != nil {
		return nil, err
	}
	chat.StreamOptions = &openai.StreamOptions{IncludeUsage: true} // usage ends every answer
	return &messagesRequest{req: req, chat: chat}, nil
}

func (s *Service) anthropicDecodeOptions() anthropic.DecodeOptions {
	return anthropic.DecodeOptions{AllowUnknownFields: s.cfg.Decode.AllowUnknownFields}
}

// messagesRequest is one Messages API request, run as the chat request
// it translates to.
type messagesRequest struct {
	req  *anthropic.Request
	chat *openai.ChatCompletionRequest
	// b builds the message from the chat chunks; made by run, once the
	// model (and its served name) is known.
	b *anthropic.Builder
}

func (x *messagesRequest) target() requestTarget {
	return requestTarget{model: x.req.Model, stream: x.req.Stream, needs: modelcard.ModelChat, endpoint: EndpointMessages}
}

func (x *messagesRequest) run(ctx context.Context, m ServedModel, id string, emit func(preprocessor.Event) error) error {
	x.b = anthropic.NewBuilder("msg_"+id, m.Name(), x.req.StopSequences)
	return m.Chat(ctx, id, x.chat, emit)
}

func (x *messagesRequest) fold() (func(preprocessor.Event) error, func() any) {
	return func(ev preprocessor.Event) error {
		x.add(ev)
		return nil
	}, func() any { return x.b.Message() }
}

// add folds a chain event into the builder and returns the stream events
// it makes; annotation events make none.
func (x *messagesRequest) add(ev preprocessor.Event) []anthropic.Event {
	c, ok := ev.Data.(*openai.ChatCompletionChunk)
	if !ok || ev.Name != "" {
		return nil
	}
	prompt := 0
	if ev.Stats != nil {
		prompt = ev.Stats.PromptTokens
	}
	return x.b.Add(c, prompt)
}

func (x *messagesRequest) streamFormat() streamFormat { return (*messageStream)(x) }

// messageStream writes a chat stream as the Messages API's named events:
// no [DONE], and a failure after the first event is an error event with
// Anthropic's error body.
type messageStream messagesRequest

func (f *messageStream) add(ev preprocessor.Event) []sseEvent {
	return messageEvents((*messagesRequest)(f).add(ev))
}

func (f *messageStream) finish() []sseEvent { return messageEvents(f.b.Finish()) }

func (f *messageStream) fail(e apiError) []sseEvent {
	return messageEvents(f.b.Fail(anthropic.NewErrorBody(e.status, e.message, "")))
}

func messageEvents(evs []anthropic.Event) []sseEvent {
	out := make([]sseEvent, len(evs))
	for i := range evs {
		out[i] = sseEvent{name: evs[i].Type, data: &evs[i]}
	}
	return out
}

// handleCountTokens serves POST /v1/messages/count_tokens: the request
// is translated as a Messages request is, rendered and tokenized by the
// model's preprocessing, and answered with the prompt's length, the
// count the model would see: {"input_tokens": N}. Nothing is generated.
func (s *Service) handleCountTokens(w http.ResponseWriter, r *http.Request) {
	id := requestID(r)
	w.Header().Set("x-request-id", id)
	refuse := func(err error) { s.reject(w, r, id, anthropicErrors.adapt(s.classify(err))) }
	body, err := s.readBody(w, r)
	if err != nil {
		refuse(err)
		return
	}
	req, chat, err := anthropic.DecodeCountTokens(body, s.anthropicDecodeOptions())
	if err != nil {
		refuse(err)
		return
	}
	m := s.lookupModel(r.Context(), req.Model)
	if m == nil || !m.Serves(modelcard.ModelChat) {
		refuse(s.modelNotFound(req.Model, modelcard.ModelChat))
		return
	}
	prep, err := m.PrepareChat(chat)
	if err != nil {
		refuse(err)
		return
	}
	writeJSON(w, http.StatusOK, anthropic.CountTokensResponse{InputTokens: len(prep.Request.TokenIDs)})
}
