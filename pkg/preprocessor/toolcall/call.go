package toolcall

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Call is one complete tool call found in a model's output.
type Call struct {
	ID        string // the id the format carries (e.g. kimi-style "functions.get_weather:0"), else "" (the caller assigns one)
	Name      string
	Arguments string // the arguments as a compact JSON object text ("{}" when the model gave none)
}

// callFromObject reads a JSON object of the form {"name": ..., "arguments":
// {...}} ("parameters" is accepted for "arguments"; an "id" string is kept).
func callFromObject(raw string) (Call, bool) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &obj); err != nil {
		return Call{}, false
	}
	var name string
	if err := json.Unmarshal(obj["name"], &name); err != nil || strings.TrimSpace(name) == "" {
		return Call{}, false
	}
	args, ok := obj["arguments"]
	if !ok {
		args = obj["parameters"]
	}
	text, ok := argumentsText(string(args))
	if !ok {
		return Call{}, false
	}
	var id string
	if rawID, ok := obj["id"]; ok {
		_ = json.Unmarshal(rawID, &id) // a non-string id is ignored
	}
	return Call{ID: id, Name: strings.TrimSpace(name), Arguments: text}, true
}

// callsFromArray reads a non-empty JSON array of call objects.
func callsFromArray(raw string) ([]Call, bool) {
	var items []json.RawMessage
	if err := json.Unmarshal([]byte(raw), &items); err != nil || len(items) == 0 {
		return nil, false
	}
	calls := make([]Call, 0, len(items))
	for _, it := range items {
		c, ok := callFromObject(string(it))
		if !ok {
			return nil, false
		}
		calls = append(calls, c)
	}
	return calls, true
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
