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
	// guided parses the output of a tool_choice "required" or named
	// function: guided decoding held it to JSON, which is parsed as such
	// whatever the model's format.
	guided *toolcall.Parser
	// single keeps the first call only (parallel_tool_calls false).
	single bool
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
	p := &outputPlan{reasoning: m.reasoning, thinking: thinkingOn(req), legacy: req.LegacyFunctions,
		single: req.ParallelToolCalls != nil && !*req.ParallelToolCalls}
	switch tc.Mode {
	case openai.ToolChoiceAuto:
		if m.tools != nil {
			p.tools = m.tools
			p.toolNames = req.ToolNames()
		}
	case openai.ToolChoiceRequired:
		p.guided = toolcall.Required()
	case openai.ToolChoiceFunction:
		p.guided = toolcall.Named(tc.Name)
	}
	if p.reasoning == nil && p.tools == nil && p.guided == nil {
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
	tools     *toolcall.Stream // the call parser, of the model's format or guided JSON
	called    int              // tool calls begun
}

// parsed is what one chunk of a choice shows: its reasoning, its
// content, then its tool-call deltas, in that order.
type parsed struct {
	reasoning string
	content   string
	calls     []toolcall.CallDelta
}

func (p parsed) empty() bool { return p.reasoning == "" && p.content == "" && len(p.calls) == 0 }

func newChoiceParser(plan *outputPlan) *choiceParser {
	c := &choiceParser{plan: plan}
	if plan.reasoning != nil {
		c.reasoning = plan.reasoning.NewStream(plan.thinking)
	}
	switch {
	case plan.guided != nil:
		c.tools = plan.guided.NewStream(nil)
	case plan.tools != nil:
		c.tools = plan.tools.NewStream(plan.toolNames)
	}
	return c
}

// step parses the next text delta; final flushes what was held back. It
// returns what the client sees, in order, as one or more chunks' worth:
// text that follows a call's deltas starts a new chunk, so that a client
// reading a chunk's content before its tool calls keeps the order.
// Reasoning is split off first; the rest is searched for tool calls.
func (c *choiceParser) step(text string, final bool) []parsed {
	cur := parsed{}
	content := text
	if c.reasoning != nil {
		cur.reasoning, content = c.reasoning.Push(text)
		if final {
			r, rest := c.reasoning.Finish()
			cur.reasoning += r
			content += rest
		}
	}
	if c.tools == nil {
		cur.content = content
		return nonEmpty(nil, cur)
	}
	ds := c.tools.Push(content)
	if final {
		ds = append(ds, c.tools.Finish()...)
	}
	var out []parsed
	for _, d := range ds {
		if d.Call == nil {
			if len(cur.calls) > 0 {
				out, cur = append(out, cur), parsed{}
			}
			cur.content += d.Content
			continue
		}
		call := *d.Call
		if c.plan.single && call.Index > 0 {
			continue // parallel_tool_calls false: the first call only
		}
		if call.Name != "" {
			c.called++
			if call.ID == "" {
				call.ID = newCallID()
			}
		}
		if n := len(cur.calls); n > 0 && cur.calls[n-1].Index == call.Index {
			cur.calls[n-1].Arguments += call.Arguments
			continue
		}
		cur.calls = append(cur.calls, call)
	}
	return nonEmpty(out, cur)
}

func nonEmpty(out []parsed, p parsed) []parsed {
	if p.empty() {
		return out
	}
	return append(out, p)
}

// newCallID returns a tool call id in OpenAI's form, "call_" and 24
// letters and digits.
func newCallID() string {
	return "call_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:24]
}

// toolCalls turns a chunk's call deltas into OpenAI's streaming shape:
// index, and in a call's first delta its id, type and function name; the
// arguments fragment as a JSON string.
func toolCalls(calls []toolcall.CallDelta) []openai.ToolCall {
	out := make([]openai.ToolCall, len(calls))
	for k, d := range calls {
		i := d.Index
		raw, _ := json.Marshal(d.Arguments) // on the wire the arguments are a JSON string
		tc := openai.ToolCall{Index: &i, Function: openai.FunctionCall{Arguments: raw}}
		if d.Name != "" {
			tc.ID, tc.Type, tc.Function.Name = d.ID, "function", d.Name
		}
		out[k] = tc
	}
	return out
}
