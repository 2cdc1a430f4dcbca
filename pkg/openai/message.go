package openai

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Message is one chat message. The typed fields are what the frontend
// reads; Raw keeps the message exactly as the client sent it (key order
// and extra keys such as "reasoning_content"), because chat templates
// may read any key.
type Message struct {
	Role       string     `json:"role"`
	Content    Content    `json:"content"`
	Name       string     `json:"name,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	// Raw is the message's JSON object as received.
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON decodes a message and keeps its raw bytes.
func (m *Message) UnmarshalJSON(b []byte) error {
	type plain Message
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		if fe, ok := errors.AsType[*fieldError](err); ok {
			return &fieldError{field: "messages." + fe.field, msg: fe.msg}
		}
		return err
	}
	*m = Message(p)
	m.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// MarshalJSON writes Raw when present, else the typed fields.
func (m Message) MarshalJSON() ([]byte, error) {
	if len(m.Raw) > 0 {
		return m.Raw, nil
	}
	type plain Message
	return json.Marshal(plain(m))
}

// Content is a message's content: a string, an array of parts, or null.
type Content struct {
	// Text is set when the content is a JSON string.
	Text *string
	// Parts is set when the content is an array.
	Parts []ContentPart
}

// ContentPart is one element of an array content.
type ContentPart struct {
	Type     string          `json:"type"`
	Text     *string         `json:"text,omitempty"`
	ImageURL json.RawMessage `json:"image_url,omitempty"`
	Raw      json.RawMessage `json:"-"`
}

// UnmarshalJSON decodes a part and keeps its raw bytes.
func (p *ContentPart) UnmarshalJSON(b []byte) error {
	type plain ContentPart
	var q plain
	if err := json.Unmarshal(b, &q); err != nil {
		return err
	}
	*p = ContentPart(q)
	p.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// IsNull reports whether the content is absent or null.
func (c Content) IsNull() bool { return c.Text == nil && c.Parts == nil }

// TextOnly returns the parts' texts when every part is a text part, and
// false otherwise (or when the content is not an array).
func (c Content) TextOnly() ([]string, bool) {
	if c.Parts == nil {
		return nil, false
	}
	texts := make([]string, 0, len(c.Parts))
	for _, p := range c.Parts {
		if p.Type != "text" || p.Text == nil {
			return nil, false
		}
		texts = append(texts, *p.Text)
	}
	return texts, true
}

// UnmarshalJSON accepts a string, an array of parts, or null.
func (c *Content) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*c = Content{}
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = Content{Text: &s}
		return nil
	case len(b) > 0 && b[0] == '[':
		var parts []ContentPart
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		if parts == nil {
			parts = []ContentPart{}
		}
		*c = Content{Parts: parts}
		return nil
	}
	return &fieldError{field: "content", msg: "expected a string, an array of content parts, or null"}
}

// MarshalJSON writes the content in the form it was given.
func (c Content) MarshalJSON() ([]byte, error) {
	switch {
	case c.Text != nil:
		return json.Marshal(*c.Text)
	case c.Parts != nil:
		return json.Marshal(c.Parts)
	}
	return []byte("null"), nil
}

// MarshalJSON writes Raw when present.
func (p ContentPart) MarshalJSON() ([]byte, error) {
	if len(p.Raw) > 0 {
		return p.Raw, nil
	}
	type plain ContentPart
	return json.Marshal(plain(p))
}

// ToolCall is a tool call in an assistant message or a response delta.
type ToolCall struct {
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names a function and its arguments (a JSON string on the
// wire; some clients send an object).
type FunctionCall struct {
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Tool is a tool the model may call. Raw keeps the client's JSON so the
// schema's key order reaches the template.
type Tool struct {
	Type     string          `json:"type"`
	Function FunctionDef     `json:"function"`
	Raw      json.RawMessage `json:"-"`
}

// FunctionDef describes a callable function.
type FunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// UnmarshalJSON decodes a tool and keeps its raw bytes.
func (t *Tool) UnmarshalJSON(b []byte) error {
	type plain Tool
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*t = Tool(p)
	t.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// MarshalJSON writes Raw when present.
func (t Tool) MarshalJSON() ([]byte, error) {
	if len(t.Raw) > 0 {
		return t.Raw, nil
	}
	type plain Tool
	return json.Marshal(plain(t))
}
