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
// prompt), or, when Prompt is set, of a text prompt (a completions
// request's), tokenized with its own tokenizer. Messages and Tools are the
// OpenAI request's, as the client sent them.
type TokenizeRequest struct {
	// Model is the served model name.
	Model string `json:"model,omitempty"`
	// Prompt, when set, is a text to tokenize instead of a conversation
	// (Messages is then empty): special tokens written in it are parsed
	// as such, and AddSpecialTokens adds the model's BOS (as the engine's
	// own completions endpoint would).
	Prompt *string `json:"prompt,omitempty"`
	// AddSpecialTokens, with Prompt, adds the tokens the model's
	// tokenizer adds to a text (its BOS, for most).
	AddSpecialTokens bool `json:"add_special_tokens,omitempty"`
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
// itself (native preprocessing). TokenizeChat returns the prompt tokens
// of a conversation, or of a text (TokenizeRequest.Prompt); a request the
// engine refuses is an error wrapping ErrInvalidArgument, with the
// engine's message.
//
// A worker serves its engine's on TokenizeEndpoint; the frontend's
// preprocessor asks one through it (preprocessor.Options.EngineTokenizer).
type ChatTokenizer interface {
	TokenizeChat(ctx context.Context, req *TokenizeRequest) ([]uint32, error)
}
