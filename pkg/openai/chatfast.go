package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// A chat body is mostly its messages' contents, and encoding/json reads
// each content byte about ten times (validation, the top-level map, the
// struct, then Message.UnmarshalJSON and Content.UnmarshalJSON each
// validating and decoding again). splitMessages decodes the messages of
// the common shape of body in one pass instead and leaves everything else,
// errors included, to the encoding/json path, which then reads only the
// small rest of the body.

// errDecline ends splitMessages' walk when the body is not of the shape it
// handles; encoding/json then decodes the whole body.
var errDecline = errors.New("openai: chat body left to encoding/json")

var messagesKey = []byte("messages")

// splitMessages decodes the messages of a chat body and returns them with
// the body in which the messages array is replaced by [], for
// decodeChat. It declines (ok false) unless body is valid UTF-8 and valid
// JSON, is an object with exactly one key `messages` (and no other key
// that encoding/json would match to that field), whose value is an array
// of messages readMessage accepts. What it accepts, encoding/json decodes
// to the same messages without error, so that decoding the rest gives the
// request, or the error, that decoding the whole body gives.
func splitMessages(body []byte) (msgs []Message, rest []byte, ok bool) {
	// validJSON agrees with json.Valid; jsonText relies on it.
	if !utf8.Valid(body) || !validJSON(body) {
		return nil, nil, false
	}
	t := &jsonText{b: body}
	if t.peek() != '{' {
		return nil, nil, false
	}
	start, end := -1, -1
	err := t.object(func(key []byte) error {
		if string(key) != "messages" {
			if bytes.EqualFold(key, messagesKey) {
				return errDecline
			}
			_, err := t.skip()
			return err
		}
		if start >= 0 || t.peek() != '[' {
			return errDecline
		}
		start = t.i
		var err error
		msgs, err = readMessages(t)
		end = t.i
		return err
	})
	if err != nil || start < 0 {
		return nil, nil, false
	}
	rest = make([]byte, 0, len(body)-(end-start)+2)
	rest = append(append(append(rest, body[:start]...), "[]"...), body[end:]...)
	return msgs, rest, true
}

// readMessages reads an array of messages; the result is not nil.
func readMessages(t *jsonText) ([]Message, error) {
	msgs := []Message{}
	err := t.array(func() error {
		m, err := readMessage(t)
		msgs = append(msgs, m)
		return err
	})
	return msgs, err
}

// Message fields, as bits of the set of keys seen in one message.
const (
	fieldRole uint8 = 1 << iota
	fieldContent
	fieldName
	fieldToolCalls
	fieldToolCallID
)

// messageFields are Message's JSON names.
var messageFields = [][]byte{[]byte("role"), []byte("content"), []byte("name"), []byte("tool_calls"), []byte("tool_call_id")}

// messageField returns the field bit of a message key, 0 for a key
// encoding/json ignores, and false for a key it would match to a field
// case-insensitively (declined: such keys can fill a field twice).
// Non-ASCII keys are declined too rather than folded.
func messageField(key []byte) (uint8, bool) {
	switch string(key) {
	case "role":
		return fieldRole, true
	case "content":
		return fieldContent, true
	case "name":
		return fieldName, true
	case "tool_calls":
		return fieldToolCalls, true
	case "tool_call_id":
		return fieldToolCallID, true
	}
	for _, c := range key {
		if c >= utf8.RuneSelf {
			return 0, false
		}
	}
	for _, f := range messageFields {
		if bytes.EqualFold(key, f) {
			return 0, false
		}
	}
	return 0, true
}

// readMessage reads one message as Message.UnmarshalJSON would. It
// declines a value that is not an object, a repeated or case-variant
// field, a field value of a kind encoding/json would refuse, and content
// parts or tool calls that encoding/json fails to decode.
func readMessage(t *jsonText) (Message, error) {
	var m Message
	if t.peek() != '{' {
		return m, errDecline
	}
	start := t.i
	var seen uint8
	err := t.object(func(key []byte) error {
		bit, ok := messageField(key)
		if !ok || seen&bit != 0 {
			return errDecline
		}
		seen |= bit
		var err error
		switch bit {
		case fieldRole:
			m.Role, err = readText(t)
		case fieldContent:
			m.Content, err = readContent(t)
		case fieldName:
			m.Name, err = readText(t)
		case fieldToolCalls:
			m.ToolCalls, err = readToolCalls(t)
		case fieldToolCallID:
			m.ToolCallID, err = readText(t)
		default:
			_, err = t.skip()
		}
		return err
	})
	if err != nil {
		return m, err
	}
	// The object's bytes, as encoding/json hands them to UnmarshalJSON.
	m.Raw = append(json.RawMessage(nil), t.b[start:t.i]...)
	return m, nil
}

// readText reads a string field; null leaves it empty, as encoding/json
// does.
func readText(t *jsonText) (string, error) {
	switch t.peek() {
	case '"':
		return t.str()
	case 'n':
		if t.null() {
			return "", nil
		}
	}
	return "", errDecline
}

// readContent reads a content as Content.UnmarshalJSON does, unquoting a
// string once; arrays of parts go through Content.UnmarshalJSON itself.
func readContent(t *jsonText) (Content, error) {
	switch t.peek() {
	case '"':
		s, err := t.str()
		return Content{Text: &s}, err
	case 'n':
		if t.null() {
			return Content{}, nil
		}
	case '[':
		raw, err := t.skip()
		if err != nil {
			return Content{}, err
		}
		var c Content
		if c.UnmarshalJSON(raw) != nil {
			return Content{}, errDecline
		}
		return c, nil
	}
	return Content{}, errDecline
}

// readToolCalls reads tool_calls with encoding/json; null is nil.
func readToolCalls(t *jsonText) ([]ToolCall, error) {
	switch t.peek() {
	case 'n':
		if t.null() {
			return nil, nil
		}
	case '[':
		raw, err := t.skip()
		if err != nil {
			return nil, err
		}
		var calls []ToolCall
		if json.Unmarshal(raw, &calls) != nil {
			return nil, errDecline
		}
		return calls, nil
	}
	return nil, errDecline
}
