package openai

import "encoding/json"

// ChatCompletionRequest is the body of POST /v1/chat/completions.
type ChatCompletionRequest struct {
	Model               string             `json:"model"`
	Messages            []Message          `json:"messages"`
	Stream              bool               `json:"stream,omitempty"`
	StreamOptions       *StreamOptions     `json:"stream_options,omitempty"`
	N                   *int               `json:"n,omitempty"`
	MaxTokens           *int64             `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int64             `json:"max_completion_tokens,omitempty"`
	Temperature         *float64           `json:"temperature,omitempty"`
	TopP                *float64           `json:"top_p,omitempty"`
	FrequencyPenalty    *float64           `json:"frequency_penalty,omitempty"`
	PresencePenalty     *float64           `json:"presence_penalty,omitempty"`
	Seed                *int64             `json:"seed,omitempty"`
	Stop                *Stop              `json:"stop,omitempty"`
	Logprobs            *bool              `json:"logprobs,omitempty"`
	TopLogprobs         *int               `json:"top_logprobs,omitempty"`
	LogitBias           map[string]float64 `json:"logit_bias,omitempty"`
	Tools               []Tool             `json:"tools,omitempty"`
	ToolChoiceRaw       json.RawMessage    `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool              `json:"parallel_tool_calls,omitempty"`
	ResponseFormat      *ResponseFormat    `json:"response_format,omitempty"`
	User                string             `json:"user,omitempty"`
	// Accepted and ignored.
	ServiceTier     json.RawMessage `json:"service_tier,omitempty"`
	Store           json.RawMessage `json:"store,omitempty"`
	Metadata        json.RawMessage `json:"metadata,omitempty"`
	ReasoningEffort json.RawMessage `json:"reasoning_effort,omitempty"`
	// Deprecated: decoding maps them to Tools and ToolChoiceRaw and sets
	// LegacyFunctions.
	Functions    json.RawMessage `json:"functions,omitempty"`
	FunctionCall json.RawMessage `json:"function_call,omitempty"`
	// LegacyFunctions marks a request that used functions/function_call:
	// its answer carries function_call instead of tool_calls.
	LegacyFunctions bool `json:"-"`

	// Chat-template controls (Dynamo/vLLM extensions).
	AddGenerationPrompt  *bool           `json:"add_generation_prompt,omitempty"`
	ContinueFinalMessage *bool           `json:"continue_final_message,omitempty"`
	ChatTemplateArgs     json.RawMessage `json:"chat_template_args,omitempty"`
	ChatTemplateKwargs   json.RawMessage `json:"chat_template_kwargs,omitempty"`
	Documents            json.RawMessage `json:"documents,omitempty"`
	Thinking             json.RawMessage `json:"thinking,omitempty"`

	CommonExt
}

// MaxTokensLimit returns max_completion_tokens when given, else max_tokens.
func (r *ChatCompletionRequest) MaxTokensLimit() *int64 {
	if r.MaxCompletionTokens != nil {
		return r.MaxCompletionTokens
	}
	return r.MaxTokens
}

// IncludeUsage reports whether stream_options.include_usage is set.
func (r *ChatCompletionRequest) IncludeUsage() bool {
	return r.StreamOptions != nil && r.StreamOptions.IncludeUsage
}
