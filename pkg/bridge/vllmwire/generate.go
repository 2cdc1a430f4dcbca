package vllmwire

// GenerateChoice is vLLM's GenerateResponseStreamChoice (and, unary,
// GenerateResponseChoice).
type GenerateChoice struct {
	Index         int                     `json:"index"`
	Logprobs      *ChatCompletionLogProbs `json:"logprobs"`
	FinishReason  *string                 `json:"finish_reason"`
	TokenIDs      []uint32                `json:"token_ids"`
	RoutedExperts *string                 `json:"routed_experts"`
}

// GenerateStreamResponse is vLLM's GenerateStreamResponse: one chunk of
// a streamed answer of POST /inference/v1/generate.
type GenerateStreamResponse struct {
	RequestID string           `json:"request_id"`
	Choices   []GenerateChoice `json:"choices"`
	Usage     *UsageInfo       `json:"usage"`
}

// GenerateResponse is vLLM's GenerateResponse: the answer of POST
// /inference/v1/generate without stream.
type GenerateResponse struct {
	RequestID        string           `json:"request_id"`
	Choices          []GenerateChoice `json:"choices"`
	PromptLogprobs   any              `json:"prompt_logprobs"`
	KVTransferParams any              `json:"kv_transfer_params"`
	Usage            UsageInfo        `json:"usage"`
}

// ChatCompletionLogProbs is vLLM's ChatCompletionLogProbs, as
// /inference/v1/generate fills it: every token named "token_id:<id>".
type ChatCompletionLogProbs struct {
	Content []ChatLogProb `json:"content"`
}

// ChatLogProb is one token's entry of ChatCompletionLogProbs, or one of
// its top alternatives.
type ChatLogProb struct {
	Token       string        `json:"token"`
	Logprob     float64       `json:"logprob"`
	Bytes       []int         `json:"bytes"`
	TopLogprobs []ChatLogProb `json:"top_logprobs,omitempty"`
}
