package anthropic

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/dynamo-go/dynamo/pkg/openai"
)

// Builder folds the chat chunks of one request's answer into a Message
// and, chunk by chunk, into the events of Anthropic's stream:
// message_start and a ping on the first chunk, then for each content
// block (thinking, text, tool_use, in the order the model produced them)
// content_block_start, its deltas and content_block_stop, and at the end
// message_delta (stop_reason, stop_sequence, usage) and message_stop.
// Only the chunks' first choice is read (Messages has no n).
type Builder struct {
	msg   Message
	stops []string // the request's stop_sequences
	// blocks are the content blocks, with their text (or thinking, or
	// tool input) so far.
	blocks  []ContentBlock
	bodies  []strings.Builder
	open    int         // the block being streamed, -1 for none
	calls   map[int]int // chat tool-call index → block
	started bool
	finish  string // the chat finish reason
	matched string // the stop string that ended the answer
	prompt  int    // prompt tokens
	cached  int    // of which read from the prefix cache
	output  int    // completion tokens
}

// NewBuilder returns the builder of message id for model, whose request
// asked for stops (stop_sequences).
func NewBuilder(id, model string, stops []string) *Builder {
	return &Builder{
		msg:   Message{ID: id, Type: "message", Role: "assistant", Model: model, Content: []ContentBlock{}},
		stops: stops, open: -1, calls: map[int]int{},
	}
}

// Add folds chunk c, of a prompt of promptTokens tokens, and returns the
// events it makes. The chunk is not kept.
func (b *Builder) Add(c *openai.ChatCompletionChunk, promptTokens int) []Event {
	var evs []Event
	if promptTokens > 0 {
		b.prompt = promptTokens
	}
	if u := c.Usage; u != nil {
		b.prompt, b.output = u.PromptTokens, u.CompletionTokens
		if u.PromptTokensDetails != nil {
			b.cached = u.PromptTokensDetails.CachedTokens
		}
	}
	if !b.started {
		b.started = true
		start := b.msg
		start.Usage = b.usage()
		evs = append(evs, Event{Type: "message_start", Message: &start}, Event{Type: "ping"})
	}
	if len(c.Choices) == 0 || c.Choices[0].Index != 0 {
		return evs
	}
	ch := &c.Choices[0]
	if d := ch.Delta.ReasoningContent; d != nil && *d != "" {
		evs = b.appendText(evs, blockThinking, *d)
	}
	if d := ch.Delta.Content; d != nil && *d != "" {
		evs = b.appendText(evs, blockText, *d)
	}
	for _, tc := range ch.Delta.ToolCalls {
		evs = b.appendCall(evs, tc)
	}
	if ch.FinishReason != nil {
		b.finish, b.matched = *ch.FinishReason, ch.MatchedStop
	}
	return evs
}

// appendText adds text to the open block of kind (thinking or text),
// opening one if the open block is of another kind.
func (b *Builder) appendText(evs []Event, kind, text string) []Event {
	if b.open < 0 || b.blocks[b.open].Type != kind {
		blk := ContentBlock{Type: kind}
		empty := ""
		if kind == blockThinking {
			blk.Thinking, blk.Signature = &empty, &empty
		} else {
			blk.Text = &empty
		}
		evs = b.openBlock(evs, blk)
	}
	b.bodies[b.open].WriteString(text)
	d := BlockDelta{Type: deltaText, Text: &text}
	if kind == blockThinking {
		d = BlockDelta{Type: deltaThinking, Thinking: &text}
	}
	return append(evs, Event{Type: "content_block_delta", Index: ptr(b.open), Delta: d})
}

// appendCall adds a tool-call delta: a call's first delta (with its name)
// opens a tool_use block; argument fragments are its input_json_deltas.
func (b *Builder) appendCall(evs []Event, tc openai.ToolCall) []Event {
	idx := 0
	if tc.Index != nil {
		idx = *tc.Index
	}
	k, ok := b.calls[idx]
	if !ok {
		evs = b.openBlock(evs, ContentBlock{Type: blockToolUse, ID: tc.ID, Name: tc.Function.Name, Input: json.RawMessage("{}")})
		k = b.open
		b.calls[idx] = k
	}
	var frag string
	if json.Unmarshal(tc.Function.Arguments, &frag) != nil {
		frag = string(tc.Function.Arguments) // an object, as some engines send
	}
	if frag == "" {
		return evs
	}
	b.bodies[k].WriteString(frag)
	return append(evs, Event{Type: "content_block_delta", Index: ptr(k), Delta: BlockDelta{Type: deltaInputJSON, PartialJSON: &frag}})
}

// openBlock closes the open block and starts blk.
func (b *Builder) openBlock(evs []Event, blk ContentBlock) []Event {
	evs = b.closeBlock(evs)
	b.blocks = append(b.blocks, blk)
	b.bodies = append(b.bodies, strings.Builder{})
	b.open = len(b.blocks) - 1
	start := blk
	return append(evs, Event{Type: "content_block_start", Index: ptr(b.open), ContentBlock: &start})
}

func (b *Builder) closeBlock(evs []Event) []Event {
	if b.open < 0 {
		return evs
	}
	evs = append(evs, Event{Type: "content_block_stop", Index: ptr(b.open)})
	b.open = -1
	return evs
}

// Finish returns the events that end a stream that succeeded: the open
// block's stop, message_delta and message_stop (after message_start,
// when no chunk came).
func (b *Builder) Finish() []Event {
	var evs []Event
	if !b.started {
		b.started = true
		start := b.msg
		start.Usage = b.usage()
		evs = append(evs, Event{Type: "message_start", Message: &start}, Event{Type: "ping"})
	}
	evs = b.closeBlock(evs)
	reason, seq := b.stopReason()
	u := b.usage()
	return append(evs, Event{Type: "message_delta", Delta: MessageDelta{StopReason: reason, StopSequence: seq}, Usage: &u},
		Event{Type: "message_stop"})
}

// Fail returns the event that ends a stream that failed after it began:
// an error event with Anthropic's error body.
func (b *Builder) Fail(body ErrorBody) []Event {
	return []Event{{Type: "error", Error: &body.Error}}
}

// Message returns the folded answer.
func (b *Builder) Message() *Message {
	m := b.msg
	m.Content = make([]ContentBlock, len(b.blocks))
	for i, blk := range b.blocks {
		body := b.bodies[i].String()
		switch blk.Type {
		case blockText:
			blk.Text = &body
		case blockThinking:
			blk.Thinking = &body
		case blockToolUse:
			blk.Input = toolInput(body)
		}
		m.Content[i] = blk
	}
	m.StopReason, m.StopSequence = b.stopReason()
	m.Usage = b.usage()
	return &m
}

// toolInput is a tool call's arguments as a tool_use input: a JSON
// object; arguments that are none, or not an object, give {}.
func toolInput(args string) json.RawMessage {
	raw := json.RawMessage(strings.TrimSpace(args))
	if isObject(raw) && json.Valid(raw) {
		return raw
	}
	return json.RawMessage("{}")
}

// stopReason maps the chat finish reason: stop is end_turn, or
// stop_sequence when one of the request's stop_sequences matched; length
// is max_tokens; tool_calls is tool_use; content_filter is refusal.
func (b *Builder) stopReason() (reason, seq *string) {
	var r string
	switch b.finish {
	case "":
		return nil, nil
	case openai.FinishLength:
		r = StopMaxTokens
	case openai.FinishToolCalls, openai.FinishFunctionCall:
		r = StopToolUse
	case openai.FinishContentFilter:
		r = StopRefusal
	default:
		r = StopEndTurn
		if b.matched != "" && slices.Contains(b.stops, b.matched) {
			r = StopSequence
			m := b.matched
			seq = &m
		}
	}
	return &r, seq
}

// usage is the accounting so far.
func (b *Builder) usage() Usage {
	cached := min(b.cached, b.prompt)
	return Usage{InputTokens: b.prompt - cached, OutputTokens: b.output, CacheReadInputTokens: cached}
}

func ptr[T any](v T) *T { return &v }
