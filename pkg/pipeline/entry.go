package pipeline

import (
	"context"

	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/preprocessor"
)

// The entry points the frontend calls. Each runs the request through the
// model's preprocessor (template, tokenizer; the output decoder on the
// way back) and the model's chain of stages (Generate): the request goes
// frontend -> pipeline -> preprocessor -> stages, and its events come
// back the same way.

// Chat runs a chat completion request; emit receives its chunks (and the
// events the preprocessor adds) in order. req.Model is set to the
// model's served name.
func (m *Model) Chat(ctx context.Context, id string, req *openai.ChatCompletionRequest, emit func(preprocessor.Event) error) error {
	req.Model = m.name
	return m.pre.Chat(ctx, id, req, m, emit)
}

// Complete runs a completions request (every prompt of it) like Chat.
func (m *Model) Complete(ctx context.Context, id string, req *openai.CompletionRequest, emit func(preprocessor.Event) error) error {
	req.Model = m.name
	return m.pre.Complete(ctx, id, req, m, emit)
}

// Embed runs an embeddings request: one engine request per input.
func (m *Model) Embed(ctx context.Context, id string, req *openai.EmbeddingRequest) (*openai.EmbeddingResponse, error) {
	req.Model = m.name
	return m.pre.Embed(ctx, id, req, m)
}

// PrepareChat builds the engine request of a chat request without
// running it (the query_instance_id annotation asks where it would go).
func (m *Model) PrepareChat(req *openai.ChatCompletionRequest) (*preprocessor.Prepared, error) {
	req.Model = m.name
	return m.pre.PrepareChat(req)
}

// PrepareCompletion builds the engine request of a completions request's
// first prompt without running it, like PrepareChat.
func (m *Model) PrepareCompletion(req *openai.CompletionRequest) (*preprocessor.Prepared, error) {
	req.Model = m.name
	preps, err := m.pre.PrepareCompletion(req)
	if err != nil {
		return nil, err
	}
	return preps[0], nil
}
