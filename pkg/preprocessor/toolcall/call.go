package toolcall

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Call is one tool call found in a model's output, whole: what a call's
// deltas add up to (Fold).
type Call struct {
	ID        string // the id the format carries (a call object's "id"), else "" (the caller assigns one)
	Name      string
	Arguments string // the arguments as a compact JSON object text ("{}" when the model gave none); cut short if the call was
}

// argumentsText turns the raw JSON value a model gave as a call's arguments
// into compact JSON object text. Missing or null arguments are "{}"; a JSON
// string holding an object is unwrapped; anything else is not arguments.
func argumentsText(raw string) (string, bool) {
	raw = strings.TrimSpace(raw)
	switch {
	case raw == "" || raw == "null":
		return "{}", true
	case raw[0] == '"':
		var inner string
		if err := json.Unmarshal([]byte(raw), &inner); err != nil {
			return "", false
		}
		inner = strings.TrimSpace(inner)
		if inner == "" {
			return "{}", true
		}
		if inner[0] != '{' {
			return "", false
		}
		return compactJSON(inner)
	case raw[0] == '{':
		return compactJSON(raw)
	}
	return "", false
}

// compactJSON returns the compact form of a JSON text.
func compactJSON(raw string) (string, bool) {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(raw)); err != nil {
		return "", false
	}
	return b.String(), true
}

// jsonString encodes s as a JSON string without HTML escaping.
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // encoding a string cannot fail
	return strings.TrimSuffix(b.String(), "\n")
}

// toolSet is the set of function names a request declares; nil accepts any.
type toolSet map[string]bool

func newToolSet(tools []string) toolSet {
	if tools == nil {
		return nil
	}
	set := make(toolSet, len(tools))
	for _, t := range tools {
		set[t] = true
	}
	return set
}

// allows reports whether every call names a declared function.
func (t toolSet) allows(calls []Call) bool {
	if t == nil {
		return true
	}
	for _, c := range calls {
		if !t[c.Name] {
			return false
		}
	}
	return true
}
