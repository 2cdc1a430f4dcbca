package preprocessor

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/google/uuid"

	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/reasoning"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/toolcall"
)

// outputPlan is how a chat request's output text is split: which
// reasoning parser runs (nil: none), and how tool calls are found.
type outputPlan struct {
	reasoning *reasoning.Parser
	thinking  bool // the request leaves thinking on
	// tools is the parser of the model's call format, used with
	// tool_choice auto; nil: calls are not looked for.
	tools     *toolcall.Parser
	toolNames []string
	// choice is the request's tool_choice. With "required" or a named
	// function guided decoding held the output to JSON, which is parsed
	// as such whatever the model's format.
	choice openai.ToolChoice
	// legacy answers with function_call, as the deprecated functions API.
	legacy bool
}

// planOutput returns the output plan of a chat request, or nil when its
// text goes to the client as it is.
func (m *Model) planOutput(req *openai.ChatCompletionRequest) *outputPlan {
	tc, err := req.ToolChoice()
	if err != nil { // validation refused the request before this
		tc = openai.ToolChoice{Mode: openai.ToolChoiceNone}
	}
	p := &outputPlan{reasoning: m.reasoning, thinking: thinkingOn(req), choice: tc, legacy: req.LegacyFunctions}
	if tc.Mode == openai.ToolChoiceAuto && m.tools != nil {
		p.tools = m.tools
		p.toolNames = req.ToolNames()
	}
	jsonCalls := tc.Mode == openai.ToolChoiceRequired || tc.Mode == openai.ToolChoiceFunction
	if p.reasoning == nil && p.tools == nil && !jsonCalls {
		return nil
	}
	return p
}

// needsSpecialTokens reports whether the parsers read markers that are
// special tokens, which the detokenizer must then keep.
func (p *outputPlan) needsSpecialTokens() bool {
	return p != nil && (p.reasoning != nil && p.reasoning.NeedsSpecialTokens() || p.tools != nil && p.tools.NeedsSpecialTokens())
}

// thinkingOn reports whether the request leaves the model's thinking on:
// chat_template_args (or _kwargs) enable_thinking false, or a thinking
// field that is false or {"type": "disabled"}, turns it off.
func thinkingOn(req *openai.ChatCompletionRequest) bool {
	for _, raw := range []json.RawMessage{req.ChatTemplateArgs, req.ChatTemplateKwargs} {
		var args struct {
			EnableThinking *bool `json:"enable_thinking"`
		}
		if json.Unmarshal(raw, &args) == nil && args.EnableThinking != nil && !*args.EnableThinking {
			return false
		}
	}
	t := bytes.TrimSpace(req.Thinking)
	if string(t) == "false" {
		return false
	}
	var obj struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(t, &obj) != nil || obj.Type != "disabled"
}

// choiceParser splits one choice's text into reasoning, content and tool
// calls, delta by delta.
type choiceParser struct {
	plan      *outputPlan
	reasoning *reasoning.Stream
	tools     *toolcall.Stream
	json      strings.Builder // the guided JSON of a required or named choice
	called    int             // tool calls emitted
}

// parsed is what one delta of a choice shows the client.
type parsed struct {
	reasoning string
	content   string
	calls     []openai.ToolCall
}

func (p parsed) empty() bool { return p.reasoning == "" && p.content == "" && len(p.calls) == 0 }

func newChoiceParser(plan *outputPlan) *choiceParser {
	c := &choiceParser{plan: plan}
	if plan.reasoning != nil {
		c.reasoning = plan.reasoning.NewStream(plan.thinking)
	}
	if plan.tools != nil {
		c.tools = plan.tools.NewStream(plan.toolNames)
	}
	return c
}

// step parses the next text delta; final flushes what was held back.
// Reasoning is split off first; the rest is searched for tool calls.
func (c *choiceParser) step(text string, final bool) parsed {
	var out parsed
	content := text
	if c.reasoning != nil {
		out.reasoning, content = c.reasoning.Push(text)
		if final {
			r, rest := c.reasoning.Finish()
			out.reasoning += r
			content += rest
		}
	}
	var calls []toolcall.Call
	switch {
	case c.plan.choice.Mode == openai.ToolChoiceRequired || c.plan.choice.Mode == openai.ToolChoiceFunction:
		c.json.WriteString(content)
		content = ""
		if final {
			content, calls = c.guidedCalls()
		}
	case c.tools != nil:
		var more []toolcall.Call
		content, calls = c.tools.Push(content)
		if final {
			var rest string
			rest, more = c.tools.Finish()
			content += rest
			calls = append(calls, more...)
		}
	}
	out.content = content
	for _, call := range calls {
		out.calls = append(out.calls, c.toolCall(call))
	}
	return out
}

// guidedCalls parses the JSON guided decoding produced: an array of
// {name, parameters} for "required", the arguments of the named function
// otherwise. JSON that does not parse is returned as content.
func (c *choiceParser) guidedCalls() (string, []toolcall.Call) {
	text := c.json.String()
	if c.plan.choice.Mode == openai.ToolChoiceRequired {
		calls, err := toolcall.ParseRequired(text)
		if err != nil || len(calls) == 0 {
			return text, nil
		}
		return "", calls
	}
	var args bytes.Buffer
	trimmed := bytes.TrimSpace([]byte(text))
	if len(trimmed) == 0 || trimmed[0] != '{' || json.Compact(&args, trimmed) != nil {
		return text, nil
	}
	return "", []toolcall.Call{{Name: c.plan.choice.Name, Arguments: args.String()}}
}

// toolCall gives a parsed call its index in the choice and an id.
func (c *choiceParser) toolCall(call toolcall.Call) openai.ToolCall {
	i := c.called
	c.called++
	id := call.ID
	if id == "" {
		id = "call-" + uuid.NewString()
	}
	args := call.Arguments
	if args == "" {
		args = "{}"
	}
	raw, _ := json.Marshal(args) // on the wire the arguments are a JSON string
	return openai.ToolCall{Index: &i, ID: id, Type: "function", Function: openai.FunctionCall{Name: call.Name, Arguments: raw}}
}
