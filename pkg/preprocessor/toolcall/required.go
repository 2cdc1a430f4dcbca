package toolcall

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrMalformed is returned (wrapped) by ParseRequired when the output is
// not a non-empty JSON array of named calls.
var ErrMalformed = errors.New("toolcall: malformed tool call output")

// ParseRequired parses the output of a tool_choice "required" request, which guided decoding
// constrained to a JSON array of {"name": ..., "parameters": {...}} objects (vLLM's and the reference system's schema).
// Missing or null parameters are "{}"; "arguments" is accepted for
// "parameters". The calls carry no ID.
func ParseRequired(text string) ([]Call, error) {
	var items []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(strings.TrimSpace(text)), &items); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%w: no calls in a tool_choice required output", ErrMalformed)
	}
	calls := make([]Call, 0, len(items))
	for i, it := range items {
		var name string
		if err := json.Unmarshal(it["name"], &name); err != nil || name == "" {
			return nil, fmt.Errorf("%w: call %d has no name", ErrMalformed, i)
		}
		params, ok := it["parameters"]
		if !ok {
			params = it["arguments"]
		}
		args, ok := argumentsText(string(params))
		if !ok {
			return nil, fmt.Errorf("%w: call %d (%s): parameters are not a JSON object", ErrMalformed, i, name)
		}
		calls = append(calls, Call{Name: name, Arguments: args})
	}
	return calls, nil
}
