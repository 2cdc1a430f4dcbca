package openai

import (
	"bytes"
	"encoding/json"
	"strings"
)

// maxGrammarNesting bounds the bracket nesting of guided_grammar.
const maxGrammarNesting = 500

// GuidedDecoding is sampling_options.guided_decoding of the worker request:
// a constraint on the output (at most one of JSON, Regex, Choice, Grammar,
// StructuralTag) plus the Backend and WhitespacePattern modifiers.
type GuidedDecoding struct {
	// JSON is a JSON schema, or a string holding one.
	JSON json.RawMessage `json:"json,omitempty"`
	// Regex is a regular expression the output must match.
	Regex string `json:"regex,omitempty"`
	// Choice lists the outputs allowed, one of which is produced.
	Choice []string `json:"choice,omitempty"`
	// Grammar is a context-free grammar (EBNF) the output must follow.
	Grammar string `json:"grammar,omitempty"`
	// Backend names the guided decoding backend (e.g. "xgrammar").
	Backend string `json:"backend,omitempty"`
	// WhitespacePattern is the whitespace allowed inside guided JSON.
	WhitespacePattern string `json:"whitespace_pattern,omitempty"`
	// StructuralTag is an xgrammar structural tag. No request field sets
	// it yet; it is here for the wire format.
	StructuralTag json.RawMessage `json:"structural_tag,omitempty"`
}

// objectSchema is the schema response_format json_object stands for.
var objectSchema = json.RawMessage(`{"type":"object"}`)

// GuidedDecoding returns the guided decoding the request asks for through
// its guided_* fields and response_format (guided_json wins over
// response_format), or nil when it asks for none. A malformed
// response_format or conflicting constraints give a *ValidationError.
//
// tool_choice "required" or a named function constrains the output to a
// tool call (ToolSchema); combined with another constraint it is a
// *ValidationError.
func (r *ChatCompletionRequest) GuidedDecoding() (*GuidedDecoding, error) {
	schema, err := responseFormatSchema(r.ResponseFormat)
	if err != nil {
		return nil, err
	}
	g, err := r.guided(schema)
	if err != nil {
		return nil, err
	}
	tc, err := r.ToolChoice()
	if err != nil {
		return nil, err
	}
	ts := r.ToolSchema(tc)
	if ts == nil {
		return g, nil
	}
	if g != nil {
		return nil, invalidParam("tool_choice", "tool_choice `%s` constrains the output to a tool call; it cannot be combined with response_format or guided_* constraints", tc.Mode)
	}
	return &GuidedDecoding{JSON: ts, Backend: deref(r.GuidedDecodingBackend)}, nil
}

// GuidedDecoding returns the guided decoding the request asks for through
// its guided_* fields, or nil when it asks for none. Conflicting
// constraints give a *ValidationError.
func (r *CompletionRequest) GuidedDecoding() (*GuidedDecoding, error) {
	return r.guided(nil)
}

// guided builds the options from the extension fields; schema is used
// when guided_json is absent.
func (c *CommonExt) guided(schema json.RawMessage) (*GuidedDecoding, error) {
	g := GuidedDecoding{
		Regex:             deref(c.GuidedRegex),
		Choice:            c.GuidedChoice,
		Grammar:           deref(c.GuidedGrammar),
		Backend:           deref(c.GuidedDecodingBackend),
		WhitespacePattern: deref(c.GuidedWhitespace),
	}
	if present(c.GuidedJSON) {
		g.JSON = c.GuidedJSON
	} else if schema != nil {
		g.JSON = schema
	}
	var set []string
	for _, s := range []struct {
		name string
		on   bool
	}{
		{"json", g.JSON != nil},
		{"regex", g.Regex != ""},
		{"choice", len(g.Choice) > 0},
		{"grammar", g.Grammar != ""},
	} {
		if s.on {
			set = append(set, s.name)
		}
	}
	switch {
	case len(set) == 0:
		return nil, nil
	case len(set) > 1:
		return nil, invalid("only one guided-decoding constraint can be set; received: %s", strings.Join(set, ", "))
	}
	if d := nesting(g.Grammar); d > maxGrammarNesting {
		return nil, invalidParam("guided_grammar", "guided_grammar exceeds maximum nesting depth of %d (got %d)", maxGrammarNesting, d)
	}
	return &g, nil
}

// responseFormatSchema returns the JSON schema response_format asks for,
// nil for none.
func responseFormatSchema(rf *ResponseFormat) (json.RawMessage, error) {
	if rf == nil {
		return nil, nil
	}
	switch rf.Type {
	case "text":
		return nil, nil
	case "json_object":
		return objectSchema, nil
	case "json_schema":
		js := rf.JSONSchema
		if js == nil {
			return nil, invalidParam("response_format.json_schema", "`response_format.json_schema` is required when `response_format.type` is `json_schema`")
		}
		if js.Name == "" {
			return nil, invalidParam("response_format.json_schema.name", "`response_format.json_schema.name` must not be empty")
		}
		if !present(js.Schema) {
			return nil, invalidParam("response_format.json_schema.schema", "`response_format.json_schema.schema` is required when `response_format.type` is `json_schema`")
		}
		if bytes.Equal(bytes.TrimSpace(js.Schema), []byte("false")) {
			return nil, invalidParam("response_format.json_schema.schema", "`response_format.json_schema.schema` cannot be false because it is unsatisfiable")
		}
		return js.Schema, nil
	}
	return nil, invalidParam("response_format.type", "`response_format.type` must be one of `text`, `json_object`, `json_schema`, got `%s`", rf.Type)
}

// nesting returns the deepest bracket nesting of s, counting (, [ and {
// without regard to quoting.
func nesting(s string) int {
	depth, deepest := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[', '{':
			depth++
			deepest = max(deepest, depth)
		case ')', ']', '}':
			depth = max(depth-1, 0)
		}
	}
	return deepest
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
