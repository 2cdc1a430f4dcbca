package anthropic

import "encoding/json"

// Stop reasons of a Message.
const (
	StopEndTurn   = "end_turn"
	StopMaxTokens = "max_tokens"
	StopSequence  = "stop_sequence"
	StopToolUse   = "tool_use"
	StopRefusal   = "refusal"
)

// Content block and delta types.
const (
	blockText      = "text"
	blockThinking  = "thinking"
	blockToolUse   = "tool_use"
	deltaText      = "text_delta"
	deltaThinking  = "thinking_delta"
	deltaInputJSON = "input_json_delta"
)

// Message is the answer of POST /v1/messages, and the message of a
// stream's message_start event (with no content yet).
type Message struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"` // "message"
	Role         string         `json:"role"` // "assistant"
	Model        string         `json:"model"`
	Content      []ContentBlock `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        Usage          `json:"usage"`
}

// ContentBlock is one block of a Message: text (Text), thinking
// (Thinking, Signature) or tool_use (ID, Name, Input).
type ContentBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
}

// Usage is a Message's token accounting. InputTokens are the prompt
// tokens not read from the engine's prefix cache; CacheReadInputTokens
// those that were, so that their sum is the prompt's length.
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// Event is one event of a Messages stream. Type is its SSE event name
// as well as its data's "type"; the other fields are those of its type.
type Event struct {
	Type string `json:"type"`
	// Message is message_start's.
	Message *Message `json:"message,omitempty"`
	// Index is the content block of content_block_start, _delta and
	// _stop.
	Index *int `json:"index,omitempty"`
	// ContentBlock is content_block_start's block, empty.
	ContentBlock *ContentBlock `json:"content_block,omitempty"`
	// Delta is a content_block_delta's BlockDelta or a message_delta's
	// MessageDelta.
	Delta any `json:"delta,omitempty"`
	// Usage is message_delta's: the whole message's counts so far.
	Usage *Usage `json:"usage,omitempty"`
	// Error is an error event's.
	Error *ErrorInfo `json:"error,omitempty"`
}

// BlockDelta is the delta of a content_block_delta: text_delta (Text),
// thinking_delta (Thinking) or input_json_delta (PartialJSON, a fragment
// of the tool input's JSON).
type BlockDelta struct {
	Type        string  `json:"type"`
	Text        *string `json:"text,omitempty"`
	Thinking    *string `json:"thinking,omitempty"`
	PartialJSON *string `json:"partial_json,omitempty"`
}

// MessageDelta is the delta of a message_delta: how the message ended.
type MessageDelta struct {
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

// CountTokensResponse is the answer of POST /v1/messages/count_tokens.
type CountTokensResponse struct {
	InputTokens int `json:"input_tokens"`
}
