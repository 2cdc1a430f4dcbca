package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// SSEDone is the line that ends a successful stream.
const SSEDone = "data: [DONE]\n\n"

// WriteSSE writes one server-sent event: "event: <name>" when name is set,
// then "data: <compact JSON of data>", then a blank line. Into a
// *bytes.Buffer it appends in place, and leaves the buffer as it was when
// data cannot be encoded.
func WriteSSE(w io.Writer, name string, data any) error {
	if bb, ok := w.(*bytes.Buffer); ok {
		return appendSSE(bb, name, data)
	}
	var buf bytes.Buffer
	if err := appendSSE(&buf, name, data); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func appendSSE(buf *bytes.Buffer, name string, data any) error {
	n := buf.Len()
	if name != "" {
		buf.WriteString("event: ")
		buf.WriteString(name)
		buf.WriteByte('\n')
	}
	buf.WriteString("data: ")
	if err := Encode(buf, data); err != nil {
		buf.Truncate(n)
		return fmt.Errorf("openai: encode event: %w", err)
	}
	buf.WriteString("\n\n")
	return nil
}

// WriteSSEError writes the event that ends a failed stream: "event: error",
// the message as a comment line, then body as the data, the same body a
// non-2xx response carries:
//
//	event: error
//	: <message>
//	data: {"error":{"message":...,"type":...,"param":...,"code":...}}
//
// No [DONE] follows it.
func WriteSSEError(w io.Writer, body ErrorBody) error {
	var buf bytes.Buffer
	comment := strings.ReplaceAll(strings.ReplaceAll(body.Error.Message, "\r", " "), "\n", " ")
	fmt.Fprintf(&buf, "event: error\n: %s\ndata: ", comment)
	if err := Encode(&buf, body); err != nil {
		return fmt.Errorf("openai: encode error event: %w", err)
	}
	buf.WriteString("\n\n")
	_, err := w.Write(buf.Bytes())
	return err
}

// Encode writes v as compact JSON without a trailing newline and without
// HTML escaping ("<" stays "<", as the reference system writes it).
func Encode(buf *bytes.Buffer, v any) error {
	if b, ok := appendChunkJSON(buf.AvailableBuffer(), v); ok {
		buf.Write(b) // the hot path: a token's chunk, without reflection
		return nil
	}
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	return nil
}

// WriteJSON writes v as compact JSON without HTML escaping.
func WriteJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	if err := Encode(&buf, v); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}
