package vllmwire

import "encoding/json"

// CompletionRequest is the body of POST /v1/completions with a token-id
// prompt (vLLM's CompletionRequest, the fields the bridge sends).
type CompletionRequest struct {
	Model                  string             `json:"model,omitempty"`
	Prompt                 []uint32           `json:"prompt"`
	Stream                 bool               `json:"stream"`
	StreamOptions          StreamOptions      `json:"stream_options"`
	ReturnTokenIDs         bool               `json:"return_token_ids"`
	MaxTokens              *uint32            `json:"max_tokens,omitempty"`
	MinTokens              *uint32            `json:"min_tokens,omitempty"`
	IgnoreEOS              *bool              `json:"ignore_eos,omitempty"`
	StopTokenIDs           []uint32           `json:"stop_token_ids,omitempty"`
	IncludeStopStrInOutput *bool              `json:"include_stop_str_in_output,omitempty"`
	Temperature            *float64           `json:"temperature,omitempty"`
	TopP                   *float64           `json:"top_p,omitempty"`
	TopK                   *int               `json:"top_k,omitempty"`
	MinP                   *float64           `json:"min_p,omitempty"`
	Seed                   *int64             `json:"seed,omitempty"`
	PresencePenalty        *float64           `json:"presence_penalty,omitempty"`
	FrequencyPenalty       *float64           `json:"frequency_penalty,omitempty"`
	RepetitionPenalty      *float64           `json:"repetition_penalty,omitempty"`
	N                      *int               `json:"n,omitempty"`
	UseBeamSearch          *bool              `json:"use_beam_search,omitempty"`
	LengthPenalty          *float64           `json:"length_penalty,omitempty"`
	Logprobs               *uint32            `json:"logprobs,omitempty"`
	ReturnTokensAsTokenIDs *bool              `json:"return_tokens_as_token_ids,omitempty"`
	SkipSpecialTokens      bool               `json:"skip_special_tokens"`
	StructuredOutputs      *StructuredOutputs `json:"structured_outputs,omitempty"`
	CacheSalt              *string            `json:"cache_salt,omitempty"`
	Priority               *int               `json:"priority,omitempty"`
	ThinkingTokenBudget    *uint32            `json:"thinking_token_budget,omitempty"`
}

// StreamOptions is a streamed request's stream_options.
type StreamOptions struct {
	// IncludeUsage asks for a last chunk with the usage and no choices.
	IncludeUsage bool `json:"include_usage"`
}

// StructuredOutputs is vLLM's StructuredOutputsParams (the
// structured_outputs field, which replaced the guided_* fields): one kind
// of constraint.
type StructuredOutputs struct {
	JSON              json.RawMessage `json:"json,omitempty"`
	Regex             string          `json:"regex,omitempty"`
	Choice            []string        `json:"choice,omitempty"`
	Grammar           string          `json:"grammar,omitempty"`
	WhitespacePattern string          `json:"whitespace_pattern,omitempty"`
	StructuralTag     string          `json:"structural_tag,omitempty"`
}

// GenerateRequest is the body of POST /inference/v1/generate (vLLM's
// GenerateRequest, the fields the bridge sends).
type GenerateRequest struct {
	Model          string         `json:"model,omitempty"`
	TokenIDs       []uint32       `json:"token_ids"`
	SamplingParams SamplingParams `json:"sampling_params"`
	Stream         bool           `json:"stream"`
	StreamOptions  *StreamOptions `json:"stream_options,omitempty"`
	CacheSalt      *string        `json:"cache_salt,omitempty"`
	Priority       *int           `json:"priority,omitempty"`
}

// SamplingParams is vLLM's SamplingParams (the fields the bridge sends).
// Detokenize false: the answer carries token ids only.
type SamplingParams struct {
	N                   *int               `json:"n,omitempty"`
	PresencePenalty     *float64           `json:"presence_penalty,omitempty"`
	FrequencyPenalty    *float64           `json:"frequency_penalty,omitempty"`
	RepetitionPenalty   *float64           `json:"repetition_penalty,omitempty"`
	Temperature         *float64           `json:"temperature,omitempty"`
	TopP                *float64           `json:"top_p,omitempty"`
	TopK                *int               `json:"top_k,omitempty"`
	MinP                *float64           `json:"min_p,omitempty"`
	Seed                *int64             `json:"seed,omitempty"`
	StopTokenIDs        []uint32           `json:"stop_token_ids,omitempty"`
	IgnoreEOS           *bool              `json:"ignore_eos,omitempty"`
	MaxTokens           *uint32            `json:"max_tokens,omitempty"`
	MinTokens           *uint32            `json:"min_tokens,omitempty"`
	Logprobs            *uint32            `json:"logprobs,omitempty"`
	Detokenize          bool               `json:"detokenize"`
	StructuredOutputs   *StructuredOutputs `json:"structured_outputs,omitempty"`
	ThinkingTokenBudget *uint32            `json:"thinking_token_budget,omitempty"`
}
