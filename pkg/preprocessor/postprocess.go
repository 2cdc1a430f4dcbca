package preprocessor

import (
	"encoding/json"
	"fmt"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/openai"
)

// Postprocessor runs one request's output side where the engine runs: a
// worker whose card says postprocessing "worker" turns each engine output
// into a backend.Output the frontend only frames (Output.Postprocessed).
// Per choice it detokenizes incrementally (seeded with the prompt),
// applies the stop ids, min_tokens and stop strings (the frontend's
// Decoder), and for a chat request (Request.Postprocess.Chat) splits the
// text with the Model's reasoning and tool-call parsers as the frontend
// would (its output plan, from the request's tool_choice, tools and
// thinking). A request the migration stage resumed (MigratedTokens) has
// the tokens earlier attempts generated at the end of its prompt: they are
// replayed through a fresh state, their output dropped (the client has
// it), so the state is the one the broken attempt had. It is not safe for
// concurrent use.
type Postprocessor struct {
	m       *Model
	plan    *outputPlan
	opts    DecoderOptions
	n       int
	choices map[uint32]*postChoice
}

type postChoice struct {
	dec    *Decoder
	parser *choiceParser
	done   bool
}

// NewPostprocessor returns the Postprocessor of req's outputs.
func (m *Model) NewPostprocessor(req *backend.Request) (*Postprocessor, error) {
	k := req.MigratedTokens
	if k < 0 || k > len(req.TokenIDs) {
		return nil, fmt.Errorf("preprocessor: %w: migrated_tokens %d of a %d-token prompt", backend.ErrInvalidArgument, k, len(req.TokenIDs))
	}
	prompt, generated := req.TokenIDs[:len(req.TokenIDs)-k], req.TokenIDs[len(req.TokenIDs)-k:]
	opts := DecoderOptionsFor(req)
	opts.PromptIDs = prompt
	opts.MinTokens += k // the migration stage lowered min_tokens by what was generated
	p := &Postprocessor{m: m, opts: opts, n: 1, choices: map[uint32]*postChoice{}}
	if pp := req.Postprocess; pp != nil && pp.Chat {
		p.plan = m.planPostprocess(pp)
	}
	if p.plan.needsSpecialTokens() && req.OutputOptions.SkipSpecialTokens == nil {
		p.opts.SkipSpecialTokens = false // the parsers read markers that are special tokens
	}
	if so := req.SamplingOptions.N; so != nil && *so > 1 {
		p.n = *so
	}
	if len(generated) > 0 {
		if _, _, err := p.Process(&backend.Output{TokenIDs: generated}); err != nil {
			return nil, fmt.Errorf("preprocessor: replay the %d migrated tokens: %w", k, err)
		}
	}
	return p, nil
}

// planPostprocess is the output plan of a chat request as the worker
// knows it (Request.Postprocess), nil when its text is taken as it is:
// planOutput's, from the request's fields the frontend sent on.
func (m *Model) planPostprocess(pp *backend.Postprocess) *outputPlan {
	tc := openai.ToolChoice{Mode: pp.ToolChoice, Name: pp.ToolName}
	if tc.Mode == "" {
		tc.Mode = openai.ToolChoiceNone
	}
	p := &outputPlan{reasoning: m.reasoning, thinking: pp.Thinking, choice: tc}
	if tc.Mode == openai.ToolChoiceAuto && m.tools != nil {
		p.tools = m.tools
		p.toolNames = pp.Tools
	}
	jsonCalls := tc.Mode == openai.ToolChoiceRequired || tc.Mode == openai.ToolChoiceFunction
	if p.reasoning == nil && p.tools == nil && !jsonCalls {
		return nil
	}
	return p
}

// postprocessOf is what the worker needs of a chat request to run its
// output side (Request.Postprocess).
func postprocessOf(req *openai.ChatCompletionRequest) *backend.Postprocess {
	pp := &backend.Postprocess{Chat: true, Thinking: thinkingOn(req)}
	if tc, err := req.ToolChoice(); err == nil {
		pp.ToolChoice, pp.ToolName = tc.Mode, tc.Name
	}
	if pp.ToolChoice == openai.ToolChoiceAuto {
		pp.Tools = req.ToolNames()
	}
	return pp
}

// Process turns one engine output into the output the frontend frames.
// It returns nil for an output of a choice that has ended (tokens the
// engine generated after a local stop), and done once every choice has
// ended: the caller then stops the engine's request.
func (p *Postprocessor) Process(o *backend.Output) (out *backend.Output, done bool, err error) {
	var i uint32
	if o.Index != nil {
		i = *o.Index
	}
	if int(i) >= p.n {
		return nil, false, fmt.Errorf("preprocessor: engine sent choice index %d for a request with n=%d", i, p.n)
	}
	c := p.choices[i]
	if c == nil {
		c = &postChoice{dec: NewDecoder(p.m.tok, p.opts)}
		if p.plan != nil {
			c.parser = newChoiceParser(p.plan)
		}
		p.choices[i] = c
	}
	if c.done {
		return nil, p.allDone(), nil
	}
	d, err := c.dec.Step(o)
	if err != nil {
		return nil, false, err
	}
	parts := parsed{content: d.Text}
	if c.parser != nil {
		parts = c.parser.step(d.Text, d.Finish != nil)
	}
	out = &backend.Output{
		TokenIDs: d.TokenIDs, LogProbs: d.LogProbs, TopLogprobs: d.TopLogprobs, Index: o.Index,
		FinishReason: d.Finish, Postprocessed: true, Tokens: o.Tokens, CumLogProbs: o.CumLogProbs,
		DisaggregatedParams: o.DisaggregatedParams, ExtraArgs: o.ExtraArgs, WorkerTraceLink: o.WorkerTraceLink,
	}
	if out.TokenIDs == nil {
		out.TokenIDs = []uint32{}
	}
	if parts.content != "" {
		out.Text = &parts.content
	}
	if parts.reasoning != "" {
		out.ReasoningText = &parts.reasoning
	}
	for _, call := range parts.calls {
		out.ToolCalls = append(out.ToolCalls, toolCallDelta(call))
	}
	if d.Finish != nil {
		c.done = true
		out.CompletionUsage = o.CompletionUsage
		if d.StopReason != nil {
			out.StopReason, _ = json.Marshal(d.StopReason)
		}
	}
	return out, p.allDone(), nil
}

// allDone reports whether every choice has ended.
func (p *Postprocessor) allDone() bool {
	if len(p.choices) < p.n {
		return false
	}
	for _, c := range p.choices {
		if !c.done {
			return false
		}
	}
	return true
}

// toolCallDelta is call as a postprocessed output carries it.
func toolCallDelta(call openai.ToolCall) backend.ToolCallDelta {
	d := backend.ToolCallDelta{ID: call.ID, Type: call.Type, Name: call.Function.Name}
	if call.Index != nil {
		d.Index = *call.Index
	}
	var args string
	if json.Unmarshal(call.Function.Arguments, &args) == nil {
		d.Arguments = args
	} else {
		d.Arguments = string(call.Function.Arguments)
	}
	return d
}

// toolCallOf is a postprocessed tool-call delta as a chunk carries it.
func toolCallOf(d backend.ToolCallDelta) openai.ToolCall {
	i := d.Index
	c := openai.ToolCall{Index: &i, ID: d.ID, Type: d.Type, Function: openai.FunctionCall{Name: d.Name}}
	if d.Arguments != "" {
		c.Function.Arguments, _ = json.Marshal(d.Arguments)
	}
	return c
}
