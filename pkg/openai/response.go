package openai

import "encoding/json"

// Object names of the response shapes.
const (
	ObjectChatCompletion      = "chat.completion"
	ObjectChatCompletionChunk = "chat.completion.chunk"
	ObjectTextCompletion      = "text_completion"
)

// Finish reasons as OpenAI spells them.
const (
	FinishStop      = "stop"
	FinishLength    = "length"
	FinishToolCalls = "tool_calls"
	// FinishFunctionCall ends a choice that called a function through the
	// deprecated functions API.
	FinishFunctionCall  = "function_call"
	FinishContentFilter = "content_filter"
)

// Usage is the token accounting of a request.
type Usage struct {
	PromptTokens        int           `json:"prompt_tokens"`
	CompletionTokens    int           `json:"completion_tokens"`
	TotalTokens         int           `json:"total_tokens"`
	PromptTokensDetails *PromptDetail `json:"prompt_tokens_details,omitempty"`
}

// PromptDetail breaks the prompt tokens down.
type PromptDetail struct {
	CachedTokens int `json:"cached_tokens"`
}

// ChatCompletionChunk is one streamed chat event.
type ChatCompletionChunk struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	Created           int64             `json:"created"`
	Model             string            `json:"model"`
	SystemFingerprint *string           `json:"system_fingerprint"`
	Choices           []ChatChunkChoice `json:"choices"`
	Usage             *Usage            `json:"usage"`
	NvExt             json.RawMessage   `json:"nvext,omitempty"`
}

// ChatChunkChoice is one choice of a chat chunk.
type ChatChunkChoice struct {
	Index        int           `json:"index"`
	Delta        ChatDelta     `json:"delta"`
	FinishReason *string       `json:"finish_reason"`
	Logprobs     *ChatLogprobs `json:"logprobs"`
	// MatchedStop is the stop string that ended the choice (finish
	// reason stop), set on its last chunk when one did; "" otherwise. It
	// is not on OpenAI's wire: edge translations read it (Anthropic's
	// stop_sequence).
	MatchedStop string `json:"-"`
}

// ChatDelta is the new part of a choice's message.
type ChatDelta struct {
	Role             string     `json:"role,omitempty"`
	Content          *string    `json:"content,omitempty"`
	ReasoningContent *string    `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
	// FunctionCall is the call of a request that used the deprecated
	// functions API.
	FunctionCall *FunctionCall `json:"function_call,omitempty"`
}

// ChatCompletion is a unary chat response.
type ChatCompletion struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	SystemFingerprint *string         `json:"system_fingerprint,omitempty"`
	Choices           []ChatChoice    `json:"choices"`
	Usage             *Usage          `json:"usage"`
	NvExt             json.RawMessage `json:"nvext,omitempty"`
}

// ChatChoice is one choice of a unary chat response.
type ChatChoice struct {
	Index        int           `json:"index"`
	Message      ChatMessage   `json:"message"`
	FinishReason *string       `json:"finish_reason"`
	Logprobs     *ChatLogprobs `json:"logprobs"`
}

// ChatMessage is the assistant message of a unary response.
type ChatMessage struct {
	Role             string     `json:"role"`
	Content          *string    `json:"content"`
	ReasoningContent *string    `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
	// FunctionCall is the call of a request that used the deprecated
	// functions API.
	FunctionCall *FunctionCall `json:"function_call,omitempty"`
}

// ChatLogprobs are a chat choice's logprobs.
type ChatLogprobs struct {
	Content []TokenLogprob `json:"content"`
}

// TokenLogprob is one token's logprob with its alternatives.
type TokenLogprob struct {
	Token       string       `json:"token"`
	Logprob     float64      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []TopLogprob `json:"top_logprobs"`
}

// TopLogprob is one alternative token.
type TopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// Completion is a completions response, streamed (one per chunk) or unary.
type Completion struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	SystemFingerprint *string            `json:"system_fingerprint,omitempty"`
	Choices           []CompletionChoice `json:"choices"`
	Usage             *Usage             `json:"usage"`
	NvExt             json.RawMessage    `json:"nvext,omitempty"`
}

// CompletionChoice is one choice of a completions response.
type CompletionChoice struct {
	Index        int                 `json:"index"`
	Text         string              `json:"text"`
	Logprobs     *CompletionLogprobs `json:"logprobs"`
	FinishReason *string             `json:"finish_reason"`
}

// CompletionLogprobs are the legacy completions logprobs.
type CompletionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float64            `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// Model is one entry of GET /v1/models.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	// Root and Parent name, on a LoRA adapter, the base model it applies
	// to (vLLM's fields); absent on a base model.
	Root   string `json:"root,omitempty"`
	Parent string `json:"parent,omitempty"`
	// MaxModelLen is the model's context window in tokens (prompt and
	// output), as vLLM reports it; absent when unknown.
	MaxModelLen int `json:"max_model_len,omitempty"`
	// Processing says where the model's prompts are rendered and
	// tokenized and its output detokenized (a Dynamo extension).
	Processing *ModelProcessing `json:"processing,omitempty"`
}

// ModelProcessing is a model's processing modes, as its card publishes
// them.
type ModelProcessing struct {
	// Preprocessing is "frontend" (the frontend renders the chat template
	// and tokenizes) or "engine" (the engine's template and tokenizer,
	// asked for by the frontend).
	Preprocessing string `json:"preprocessing"`
	// Postprocessing is "frontend", "worker" or "engine": who turns the
	// generated tokens into text.
	Postprocessing string `json:"postprocessing"`
}

// ModelList is the body of GET /v1/models.
type ModelList struct {
	Object string  `json:"object"`
	Data   []Model `json:"data"`
}
