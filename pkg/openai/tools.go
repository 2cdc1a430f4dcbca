package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// Tool choice modes (ToolChoice.Mode).
const (
	ToolChoiceNone     = "none"
	ToolChoiceAuto     = "auto"
	ToolChoiceRequired = "required"
	// ToolChoiceFunction names one function the model must call.
	ToolChoiceFunction = "function"
)

// ToolChoice is a request's tool_choice, decoded.
type ToolChoice struct {
	// Mode is one of the ToolChoice* constants.
	Mode string
	// Name is the function a ToolChoiceFunction choice names.
	Name string
}

// ToolChoice returns the request's tool_choice. Absent, it is "auto"
// when the request has tools and "none" without, as OpenAI defaults it. A
// malformed value, a named function that is not among the tools, or
// "required" without tools is a *ValidationError.
func (r *ChatCompletionRequest) ToolChoice() (ToolChoice, error) {
	if !present(r.ToolChoiceRaw) {
		if len(r.Tools) > 0 {
			return ToolChoice{Mode: ToolChoiceAuto}, nil
		}
		return ToolChoice{Mode: ToolChoiceNone}, nil
	}
	var s string
	if json.Unmarshal(r.ToolChoiceRaw, &s) == nil {
		switch s {
		case ToolChoiceNone, ToolChoiceAuto:
			return ToolChoice{Mode: s}, nil
		case ToolChoiceRequired:
			if len(r.Tools) == 0 {
				return ToolChoice{}, invalidParam("tool_choice", "tool_choice `required` needs at least one tool in `tools`")
			}
			return ToolChoice{Mode: s}, nil
		}
		return ToolChoice{}, invalidParam("tool_choice", "tool_choice must be `none`, `auto`, `required` or {\"type\": \"function\", \"function\": {\"name\": ...}}, got %q", s)
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(r.ToolChoiceRaw, &named); err != nil || named.Type != "function" || named.Function.Name == "" {
		return ToolChoice{}, invalidParam("tool_choice", "tool_choice must be `none`, `auto`, `required` or {\"type\": \"function\", \"function\": {\"name\": ...}}")
	}
	if !slices.ContainsFunc(r.Tools, func(t Tool) bool { return t.Function.Name == named.Function.Name }) {
		return ToolChoice{}, invalidParam("tool_choice", "tool_choice names function %q, which is not in `tools`", named.Function.Name)
	}
	return ToolChoice{Mode: ToolChoiceFunction, Name: named.Function.Name}, nil
}

// ToolChoiceNone reports whether the model may not call tools: tool_choice
// is "none", or there are no tools.
func (r *ChatCompletionRequest) ToolChoiceNone() bool {
	tc, err := r.ToolChoice()
	return err == nil && tc.Mode == ToolChoiceNone
}

// ToolNames returns the names of the request's functions.
func (r *ChatCompletionRequest) ToolNames() []string {
	names := make([]string, len(r.Tools))
	for i, t := range r.Tools {
		names[i] = t.Function.Name
	}
	return names
}

// validateTools checks that every tool is a function with a name and,
// when given, a parameters schema that is a JSON object whose type,
// properties and required members have the right shapes.
func (r *ChatCompletionRequest) validateTools() error {
	for i, t := range r.Tools {
		p := fmt.Sprintf("tools[%d]", i)
		if t.Type != "function" {
			return invalidParam(p+".type", "%s: type must be `function`, got %q", p, t.Type)
		}
		if t.Function.Name == "" {
			return invalidParam(p+".function.name", "%s: function.name is required", p)
		}
		if err := checkSchema(t.Function.Parameters); err != nil {
			return invalidParam(p+".function.parameters", "%s: function.parameters is not a valid JSON schema: %v", p, err)
		}
	}
	_, err := r.ToolChoice()
	return err
}

// checkSchema is a shallow check of a function's parameters schema: what
// a template and guided decoding would trip over.
func checkSchema(raw json.RawMessage) error {
	if !present(raw) {
		return nil
	}
	var s struct {
		Type       json.RawMessage `json:"type"`
		Properties json.RawMessage `json:"properties"`
		Required   json.RawMessage `json:"required"`
	}
	if bytes.TrimSpace(raw)[0] != '{' || json.Unmarshal(raw, &s) != nil {
		return fmt.Errorf("it must be a JSON object")
	}
	if present(s.Type) {
		var one string
		var many []string
		if json.Unmarshal(s.Type, &one) != nil && json.Unmarshal(s.Type, &many) != nil {
			return fmt.Errorf("`type` must be a string or a list of strings")
		}
	}
	if present(s.Properties) {
		var props map[string]json.RawMessage
		if json.Unmarshal(s.Properties, &props) != nil {
			return fmt.Errorf("`properties` must be an object")
		}
		for name, p := range props {
			if t := bytes.TrimSpace(p); len(t) == 0 || (t[0] != '{' && string(t) != "true" && string(t) != "false") {
				return fmt.Errorf("property %q must be a schema (an object or a boolean)", name)
			}
		}
	}
	if present(s.Required) {
		var req []string
		if json.Unmarshal(s.Required, &req) != nil {
			return fmt.Errorf("`required` must be a list of strings")
		}
	}
	return nil
}

// ToolSchema returns the JSON schema that guided decoding must hold the
// output to for tool_choice tc: for "required" an array of one or more
// {"name", "parameters"} objects, one variant per tool (the schema vLLM
// and the reference system use), of one at most when parallel_tool_calls
// is false; for a named function that function's parameters. It returns
// nil for "none" and "auto".
func (r *ChatCompletionRequest) ToolSchema(tc ToolChoice) json.RawMessage {
	params := func(t Tool) json.RawMessage {
		if present(t.Function.Parameters) {
			return t.Function.Parameters
		}
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	switch tc.Mode {
	case ToolChoiceFunction:
		for _, t := range r.Tools {
			if t.Function.Name == tc.Name {
				return params(t)
			}
		}
	case ToolChoiceRequired:
		variants := make([]any, len(r.Tools))
		for i, t := range r.Tools {
			variants[i] = map[string]any{
				"type": "object",
				"properties": map[string]any{
					"name":       map[string]any{"type": "string", "enum": []string{t.Function.Name}},
					"parameters": params(t),
				},
				"required": []string{"name", "parameters"},
			}
		}
		schema := map[string]any{"type": "array", "minItems": 1, "items": map[string]any{"anyOf": variants}}
		if r.ParallelToolCalls != nil && !*r.ParallelToolCalls {
			schema["maxItems"] = 1
		}
		b, _ := json.Marshal(schema)
		return b
	}
	return nil
}

// mapLegacyFunctions turns the deprecated `functions` / `function_call`
// parameters into `tools` / `tool_choice` and marks the request so that
// the answer uses `function_call` as the old API did.
func (r *ChatCompletionRequest) mapLegacyFunctions() error {
	if !present(r.Functions) && !present(r.FunctionCall) {
		return nil
	}
	if len(r.Tools) > 0 || present(r.ToolChoiceRaw) {
		return invalidParam("functions", "the deprecated `functions` / `function_call` cannot be combined with `tools` / `tool_choice`")
	}
	r.LegacyFunctions = true
	if present(r.Functions) {
		var defs []FunctionDef
		if err := json.Unmarshal(r.Functions, &defs); err != nil {
			return invalidParam("functions", "functions must be a list of function definitions")
		}
		for _, d := range defs {
			r.Tools = append(r.Tools, Tool{Type: "function", Function: d})
		}
	}
	if !present(r.FunctionCall) {
		return nil
	}
	var s string
	if json.Unmarshal(r.FunctionCall, &s) == nil {
		if s != ToolChoiceNone && s != ToolChoiceAuto {
			return invalidParam("function_call", "function_call must be `none`, `auto` or {\"name\": ...}, got %q", s)
		}
		r.ToolChoiceRaw, _ = json.Marshal(s)
		return nil
	}
	var named struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(r.FunctionCall, &named); err != nil || named.Name == "" {
		return invalidParam("function_call", "function_call must be `none`, `auto` or {\"name\": ...}")
	}
	r.ToolChoiceRaw, _ = json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": named.Name}})
	return nil
}
