package preprocessor

import (
	"encoding/json"
	"fmt"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/toolcall"
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
	p := &outputPlan{reasoning: m.reasoning, thinking: pp.Thinking, single: pp.SingleToolCall}
	switch pp.ToolChoice {
	case openai.ToolChoiceAuto:
		if m.tools != nil {
			p.tools = m.tools
			p.toolNames = pp.Tools
		}
	case openai.ToolChoiceRequired:
		p.guided = toolcall.Required()
	case openai.ToolChoiceFunction:
		p.guided = toolcall.Named(pp.ToolName)
	}
	if p.reasoning == nil && p.tools == nil && p.guided == nil {
		return nil
	}
	return p
}

// postprocessOf is what the worker needs of a chat request to run its
// output side (Request.Postprocess).
func postprocessOf(req *openai.ChatCompletionRequest) *backend.Postprocess {
	pp := &backend.Postprocess{Chat: true, Thinking: thinkingOn(req),
		SingleToolCall: req.ParallelToolCalls != nil && !*req.ParallelToolCalls}
	if tc, err := req.ToolChoice(); err == nil {
		pp.ToolChoice, pp.ToolName = tc.Mode, tc.Name
	}
	if pp.ToolChoice == openai.ToolChoiceAuto {
		pp.Tools = req.ToolNames()
	}
	return pp
}

// Process turns one engine output into the outputs the frontend frames:
// one, or several when the parsers' text comes after a tool call's deltas
// in the same step (each output shows reasoning, content, then calls, so
// order survives); the first carries the engine output's token ids and
// logprobs, the last its finish. It returns none for an output of a
// choice that has ended (tokens the engine generated after a local stop),
// and done once every choice has ended: the caller then stops the
// engine's request.
func (p *Postprocessor) Process(o *backend.Output) (outs []*backend.Output, done bool, err error) {
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
	parts := nonEmpty(nil, parsed{content: d.Text})
	if c.parser != nil {
		parts = c.parser.step(d.Text, d.Finish != nil)
	}
	if len(parts) == 0 {
		parts = []parsed{{}} // the token ids (and logprobs, finish) alone
	}
	outs = make([]*backend.Output, len(parts))
	for k, part := range parts {
		out := &backend.Output{TokenIDs: []uint32{}, Index: o.Index, Postprocessed: true}
		if k == 0 {
			out.TokenIDs, out.LogProbs, out.TopLogprobs = d.TokenIDs, d.LogProbs, d.TopLogprobs
			out.Tokens, out.CumLogProbs = o.Tokens, o.CumLogProbs
			out.DisaggregatedParams, out.ExtraArgs, out.WorkerTraceLink = o.DisaggregatedParams, o.ExtraArgs, o.WorkerTraceLink
			if out.TokenIDs == nil {
				out.TokenIDs = []uint32{}
			}
		}
		if part.content != "" {
			out.Text = &part.content
		}
		if part.reasoning != "" {
			out.ReasoningText = &part.reasoning
		}
		for _, call := range part.calls {
			out.ToolCalls = append(out.ToolCalls, toolCallDelta(call))
		}
		if k == len(parts)-1 && d.Finish != nil {
			c.done = true
			out.FinishReason = d.Finish
			out.CompletionUsage = o.CompletionUsage
			if d.StopReason != nil {
				out.StopReason, _ = json.Marshal(d.StopReason)
			}
		}
		outs[k] = out
	}
	return outs, p.allDone(), nil
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

// toolCallDelta is a parser's call delta as a postprocessed output
// carries it: id, type and name in the call's first delta only.
func toolCallDelta(call toolcall.CallDelta) backend.ToolCallDelta {
	d := backend.ToolCallDelta{Index: call.Index, ID: call.ID, Name: call.Name, Arguments: call.Arguments}
	if call.Name != "" {
		d.Type = "function"
	}
	return d
}
