package vllmwire

// CompletionStreamChoice is vLLM's CompletionResponseStreamChoice.
type CompletionStreamChoice struct {
	Index          int                 `json:"index"`
	Text           string              `json:"text"`
	Logprobs       *CompletionLogProbs `json:"logprobs"`
	FinishReason   *string             `json:"finish_reason"`
	StopReason     any                 `json:"stop_reason"`
	PromptTokenIDs []uint32            `json:"prompt_token_ids"`
	TokenIDs       []uint32            `json:"token_ids"`
}

// CompletionStreamResponse is vLLM's CompletionStreamResponse: one chunk
// of a streamed answer of POST /v1/completions.
type CompletionStreamResponse struct {
	ID      string                   `json:"id"`
	Object  string                   `json:"object"`
	Created int64                    `json:"created"`
	Model   string                   `json:"model"`
	Choices []CompletionStreamChoice `json:"choices"`
	Usage   *UsageInfo               `json:"usage"`
}

// CompletionUsageChunk is a stream's last chunk with include_usage: no
// choices and the usage (vLLM drops the chunk's None fields).
type CompletionUsageChunk struct {
	ID      string                   `json:"id"`
	Object  string                   `json:"object"`
	Created int64                    `json:"created"`
	Model   string                   `json:"model"`
	Choices []CompletionStreamChoice `json:"choices"`
	Usage   UsageInfo                `json:"usage"`
}

// UsageInfo is vLLM's UsageInfo, with prompt_tokens_details as vLLM
// sends it under --enable-prompt-tokens-details.
type UsageInfo struct {
	PromptTokens        int                   `json:"prompt_tokens"`
	TotalTokens         int                   `json:"total_tokens"`
	CompletionTokens    int                   `json:"completion_tokens"`
	PromptTokensDetails *PromptTokenUsageInfo `json:"prompt_tokens_details,omitempty"`
}

// PromptTokenUsageInfo is vLLM's PromptTokenUsageInfo.
type PromptTokenUsageInfo struct {
	CachedTokens int `json:"cached_tokens"`
}

// CompletionLogProbs is vLLM's CompletionLogProbs: per token, its text
// offset, logprob, spelling ("token_id:<id>" with
// return_tokens_as_token_ids) and top alternatives by spelling.
type CompletionLogProbs struct {
	TextOffset    []int                `json:"text_offset"`
	TokenLogprobs []float64            `json:"token_logprobs"`
	Tokens        []string             `json:"tokens"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
}

// CompletionChoice is vLLM's CompletionResponseChoice.
type CompletionChoice struct {
	Index          int                 `json:"index"`
	Text           string              `json:"text"`
	Logprobs       *CompletionLogProbs `json:"logprobs"`
	FinishReason   *string             `json:"finish_reason"`
	StopReason     any                 `json:"stop_reason"`
	PromptLogprobs any                 `json:"prompt_logprobs"`
	PromptTokenIDs []uint32            `json:"prompt_token_ids"`
	TokenIDs       []uint32            `json:"token_ids"`
}

// CompletionResponse is vLLM's CompletionResponse: the answer of POST
// /v1/completions without stream.
type CompletionResponse struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	Choices           []CompletionChoice `json:"choices"`
	ServiceTier       *string            `json:"service_tier"`
	SystemFingerprint *string            `json:"system_fingerprint"`
	Usage             UsageInfo          `json:"usage"`
	KVTransferParams  any                `json:"kv_transfer_params"`
}
