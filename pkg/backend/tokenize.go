package backend

import (
	"context"
	"encoding/json"
)

// TokenizeEndpoint is the name of the endpoint, beside the generate
// endpoint, on which a worker whose engine is a ChatTokenizer answers
// TokenizeRequests (a model whose card says preprocessing "engine"): one
// item, a TokenizeResponse, or an error (the engine refusing the
// conversation is TypeInvalidArgument).
const TokenizeEndpoint = "tokenize"

// TokenizeRequest asks an engine for the prompt tokens of a chat
// conversation, rendered with its own chat template and tokenized with its
// own tokenizer (vLLM's TokenizeChatRequest, the fields that shape the
// prompt). Messages and Tools are the OpenAI request's, as the client sent
// them.
type TokenizeRequest struct {
	// Model is the served model name.
	Model string `json:"model,omitempty"`
	// Messages is the conversation (a JSON array of OpenAI messages).
	Messages json.RawMessage `json:"messages"`
	// Tools is the OpenAI tools array; absent when the template gets none.
	Tools json.RawMessage `json:"tools,omitempty"`
	// AddGenerationPrompt ends the prompt with the assistant's turn.
	AddGenerationPrompt bool `json:"add_generation_prompt"`
	// ContinueFinalMessage leaves the final message open.
	ContinueFinalMessage bool `json:"continue_final_message,omitempty"`
	// ChatTemplateKwargs are extra template variables (a JSON object).
	ChatTemplateKwargs json.RawMessage `json:"chat_template_kwargs,omitempty"`
}

// TokenizeResponse is the answer to a TokenizeRequest.
type TokenizeResponse struct {
	// Tokens is the prompt.
	Tokens []uint32 `json:"tokens"`
}

// ChatTokenizer is an engine that renders and tokenizes chat prompts
// itself (native preprocessing). TokenizeChat returns the prompt tokens;
// a conversation the engine refuses is an error wrapping
// ErrInvalidArgument, with the engine's message.
type ChatTokenizer interface {
	TokenizeChat(ctx context.Context, req *TokenizeRequest) ([]uint32, error)
}
