package openai

import (
	"strconv"

	"github.com/dynamo-go/dynamo/internal/strictjson"
)

// appendChunkJSON appends the JSON of the streamed chunks the hot path
// writes (one per token) without reflection, byte for byte what Encode
// writes with encoding/json. It reports false, and appends nothing, for a
// chunk it leaves to encoding/json: one with usage, nvext, logprobs, tool
// calls or a function call. Completion is the completions chunk (and
// unary body).
func appendChunkJSON(b []byte, v any) ([]byte, bool) {
	switch c := v.(type) {
	case *ChatCompletionChunk:
		return c.appendJSON(b)
	case *Completion:
		return c.appendJSON(b)
	}
	return b, false
}

func (c *ChatCompletionChunk) appendJSON(b []byte) ([]byte, bool) {
	if c.Usage != nil || len(c.NvExt) > 0 {
		return b, false
	}
	for i := range c.Choices {
		if ch := &c.Choices[i]; ch.Logprobs != nil || len(ch.Delta.ToolCalls) > 0 || ch.Delta.FunctionCall != nil {
			return b, false
		}
	}
	b = appendHead(b, c.ID, c.Object, c.Created, c.Model)
	b = append(b, `,"system_fingerprint":`...)
	b = appendOptString(b, c.SystemFingerprint)
	b = append(b, `,"choices":`...)
	b = appendChoices(b, len(c.Choices), c.Choices == nil, func(b []byte, i int) []byte {
		ch := &c.Choices[i]
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(ch.Index), 10)
		b = append(b, `,"delta":{`...)
		sep := ""
		if ch.Delta.Role != "" {
			b = append(b, `"role":`...)
			b = appendString(b, ch.Delta.Role)
			sep = ","
		}
		if ch.Delta.Content != nil {
			b = append(append(b, sep...), `"content":`...)
			b = appendString(b, *ch.Delta.Content)
			sep = ","
		}
		if ch.Delta.ReasoningContent != nil {
			b = append(append(b, sep...), `"reasoning_content":`...)
			b = appendString(b, *ch.Delta.ReasoningContent)
		}
		b = append(b, `},"finish_reason":`...)
		b = appendOptString(b, ch.FinishReason)
		return append(b, `,"logprobs":null}`...)
	})
	return append(b, `,"usage":null}`...), true
}

func (c *Completion) appendJSON(b []byte) ([]byte, bool) {
	if c.Usage != nil || len(c.NvExt) > 0 {
		return b, false
	}
	for i := range c.Choices {
		if c.Choices[i].Logprobs != nil {
			return b, false
		}
	}
	b = appendHead(b, c.ID, c.Object, c.Created, c.Model)
	if c.SystemFingerprint != nil { // omitempty here
		b = append(b, `,"system_fingerprint":`...)
		b = appendString(b, *c.SystemFingerprint)
	}
	b = append(b, `,"choices":`...)
	b = appendChoices(b, len(c.Choices), c.Choices == nil, func(b []byte, i int) []byte {
		ch := &c.Choices[i]
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(ch.Index), 10)
		b = append(b, `,"text":`...)
		b = appendString(b, ch.Text)
		b = append(b, `,"logprobs":null,"finish_reason":`...)
		b = appendOptString(b, ch.FinishReason)
		return append(b, '}')
	})
	return append(b, `,"usage":null}`...), true
}

// appendChoices appends a JSON array of n elements written by elem, or
// null for a nil slice.
func appendChoices(b []byte, n int, isNil bool, elem func(b []byte, i int) []byte) []byte {
	if isNil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = elem(b, i)
	}
	return append(b, ']')
}

// appendHead appends {"id":..,"object":..,"created":..,"model":..
func appendHead(b []byte, id, object string, created int64, model string) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, id)
	b = append(b, `,"object":`...)
	b = appendString(b, object)
	b = append(b, `,"created":`...)
	b = strconv.AppendInt(b, created, 10)
	b = append(b, `,"model":`...)
	return appendString(b, model)
}

func appendOptString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}

// appendString appends s as a JSON string exactly as encoding/json does
// with HTML escaping off.
func appendString(b []byte, s string) []byte { return strictjson.AppendString(b, s, false) }
