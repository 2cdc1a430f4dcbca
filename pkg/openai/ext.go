package openai

import "encoding/json"

// CommonExt are the Dynamo/vLLM extension fields accepted at the root of
// both chat and completions requests.
type CommonExt struct {
	IgnoreEOS              *bool           `json:"ignore_eos,omitempty"`
	MinTokens              *uint32         `json:"min_tokens,omitempty"`
	TopK                   *int            `json:"top_k,omitempty"`
	MinP                   *float64        `json:"min_p,omitempty"`
	RepetitionPenalty      *float64        `json:"repetition_penalty,omitempty"`
	IncludeStopStrInOutput *bool           `json:"include_stop_str_in_output,omitempty"`
	GuidedJSON             json.RawMessage `json:"guided_json,omitempty"`
	GuidedRegex            *string         `json:"guided_regex,omitempty"`
	GuidedGrammar          *string         `json:"guided_grammar,omitempty"`
	GuidedChoice           []string        `json:"guided_choice,omitempty"`
	GuidedDecodingBackend  *string         `json:"guided_decoding_backend,omitempty"`
	GuidedWhitespace       *string         `json:"guided_whitespace_pattern,omitempty"`
	SkipSpecialTokens      *bool           `json:"skip_special_tokens,omitempty"`
	PromptLogprobs         *uint32         `json:"prompt_logprobs,omitempty"`
	ReturnTokensAsTokenIDs *bool           `json:"return_tokens_as_token_ids,omitempty"`
	StopTokenIDs           []uint32        `json:"stop_token_ids,omitempty"`
	CacheSalt              *string         `json:"cache_salt,omitempty"`
	// Accepted and passed on untouched.
	Detokenize       *bool           `json:"detokenize,omitempty"`
	AllowedTokenIDs  []uint32        `json:"allowed_token_ids,omitempty"`
	BadWordsTokenIDs json.RawMessage `json:"bad_words_token_ids,omitempty"`
	NvExt            *NvExt          `json:"nvext,omitempty"`
}

// NvExt is the "nvext" object. Unknown keys inside it are rejected.
type NvExt struct {
	GreedSampling     *bool           `json:"greed_sampling,omitempty"`
	UseRawPrompt      *bool           `json:"use_raw_prompt,omitempty"`
	Annotations       []string        `json:"annotations,omitempty"`
	BackendInstanceID *uint64         `json:"backend_instance_id,omitempty"`
	TokenData         []uint32        `json:"token_data,omitempty"`
	MaxThinkingTokens *uint32         `json:"max_thinking_tokens,omitempty"`
	ExtraFields       []string        `json:"extra_fields,omitempty"`
	PrefillWorkerID   *uint64         `json:"prefill_worker_id,omitempty"`
	DecodeWorkerID    *uint64         `json:"decode_worker_id,omitempty"`
	DPRank            *uint32         `json:"dp_rank,omitempty"`
	PrefillDPRank     *uint32         `json:"prefill_dp_rank,omitempty"`
	AgentHints        json.RawMessage `json:"agent_hints,omitempty"`
	SessionControl    json.RawMessage `json:"session_control,omitempty"`
	RequestTimestamp  *int64          `json:"request_timestamp_ms,omitempty"`
	CacheSalt         *string         `json:"cache_salt,omitempty"`
	Router            json.RawMessage `json:"router,omitempty"`
}

// Annotation names a client may ask for in nvext.annotations.
const (
	AnnotationRequestID       = "request_id"
	AnnotationFormattedPrompt = "formatted_prompt"
	AnnotationTokenIDs        = "token_ids"
	AnnotationLLMMetrics      = "llm_metrics"
	AnnotationQueryInstanceID = "query_instance_id"
)

// HasAnnotation reports whether nvext asks for annotation name.
func (n *NvExt) HasAnnotation(name string) bool {
	if n == nil {
		return false
	}
	for _, a := range n.Annotations {
		if a == name {
			return true
		}
	}
	return false
}

// StreamOptions are the stream_options object.
type StreamOptions struct {
	IncludeUsage         bool `json:"include_usage,omitempty"`
	ContinuousUsageStats bool `json:"continuous_usage_stats,omitempty"`
}

// Stop is the "stop" field: one string or a list of strings. A list of
// integers is taken as stop token ids.
type Stop struct {
	Strings []string
	IDs     []uint32
}

// UnmarshalJSON accepts a string, a list of strings, a list of token ids,
// or null.
func (s *Stop) UnmarshalJSON(b []byte) error {
	*s = Stop{}
	if string(b) == "null" {
		return nil
	}
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		s.Strings = []string{one}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err == nil {
		s.Strings = list
		return nil
	}
	var ids []uint32
	if err := json.Unmarshal(b, &ids); err == nil {
		s.IDs = ids
		return nil
	}
	return &fieldError{field: "stop", msg: "expected a string, an array of strings, or an array of token ids"}
}

// MarshalJSON writes the list form.
func (s Stop) MarshalJSON() ([]byte, error) {
	if s.IDs != nil {
		return json.Marshal(s.IDs)
	}
	return json.Marshal(s.Strings)
}

// ResponseFormat is the response_format object.
type ResponseFormat struct {
	Type       string          `json:"type"`
	JSONSchema *JSONSchemaSpec `json:"json_schema,omitempty"`
}

// JSONSchemaSpec is response_format.json_schema.
type JSONSchemaSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}
