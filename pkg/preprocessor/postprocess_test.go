package preprocessor

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/openai"
)

// workerFrontend is a frontend's Model of a model whose card says
// postprocessing "worker", without parsers of its own (so that whatever
// it shows was parsed by the worker).
func workerFrontend(t *testing.T) *Model {
	t.Helper()
	m := *demoModel(t)
	card := *m.card
	card.RuntimeConfig.Postprocessing = modelcard.ProcessingWorker
	m.card = &card
	m.reasoning, m.tools = nil, nil
	return &m
}

// postprocessed is a worker that runs the output side with m's
// Postprocessor over engine, and stops the engine once every choice
// stopped; stops counts those early stops.
type postprocessed struct {
	m       *Model
	engine  backend.Generator
	stops   int
	request *backend.Request
}

var errEarly = errors.New("stopped early")

func (p *postprocessed) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	p.request = req
	pp, err := p.m.NewPostprocessor(req)
	if err != nil {
		return err
	}
	err = p.engine.Generate(ctx, req, func(o *backend.Output) error {
		outs, done, err := pp.Process(o)
		if err != nil {
			return err
		}
		for _, out := range outs {
			if err := emit(out); err != nil {
				return err
			}
		}
		if done && !o.IsTerminal() {
			return errEarly
		}
		return nil
	})
	if errors.Is(err, errEarly) {
		p.stops++
		return nil
	}
	return err
}

// chatUnary folds a chat request's stream, as a client would read it.
func chatResult(t *testing.T, m *Model, body string, next backend.Generator) openai.ChatChoice {
	t.Helper()
	var acc ChatAccumulator
	err := m.Chat(context.Background(), "s", validChat(t, body), next, func(ev Event) error {
		if c, ok := ev.Data.(*openai.ChatCompletionChunk); ok && ev.Name == "" {
			acc.Add(c)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return acc.Result().Choices[0]
}

// With the output side on the worker (its Postprocessor, its parsers) and
// a frontend that only frames, a client reads what it reads with the
// output side on the frontend: the same reasoning, content, tool calls and
// finish, for random splits of the engine's output, with stop strings
// applied on the worker (which stops the engine), tool_choice required
// parsed on the worker, and thinking off carried to it.
func TestWorkerPostprocessingMatchesTheFrontend(t *testing.T) {
	outputs := []struct{ reasoning, tools, text, extra string }{
		{"deepseek_r1", "hermes", `Plan: call twice.</think>Sure. <tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call> and <tool_call>{"name": "get_weather", "arguments": {"city": "Lima"}}</tool_call> done`, ""},
		{"qwen3", "hermes", `<think>hmm <tool_call> is a tag</think>Text with < and <tool and </tool_call> that is no call.`, ""},
		{"gpt_oss", "harmony", `<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Rome"}<|call|>`, ""},
		{"", "hermes", `The answer, then STOP and more text`, `,"stop":["STOP"]`},
		{"deepseek_r1", "", `thinking off: all of this is content</think> really`, `,"chat_template_args":{"enable_thinking":false}`},
		{"", "hermes", `[{"name": "get_weather", "parameters": {"city": "Bern"}}]`, `,"tool_choice":"required"`},
	}
	rng := rand.New(rand.NewPCG(19, 3))
	front := workerFrontend(t)
	for _, o := range outputs {
		m := parserModel(t, o.reasoning, o.tools)
		ids := encodeIDs(t, m, o.text)
		body := toolBody(o.extra)
		want := chatResult(t, m, body, &grouped{ids: ids, rng: rng})
		for round := 0; round < 10; round++ {
			w := &postprocessed{m: m, engine: &grouped{ids: ids, rng: rng}}
			got := chatResult(t, front, body, w)
			if str(got.Message.Content) != str(want.Message.Content) || str(got.Message.ReasoningContent) != str(want.Message.ReasoningContent) ||
				*got.FinishReason != *want.FinishReason || !sameCalls(got.Message.ToolCalls, want.Message.ToolCalls) {
				t.Fatalf("%s/%s %q, round %d:\nworker   %+v %s\nfrontend %+v %s", o.reasoning, o.tools, o.text, round, got.Message, *got.FinishReason, want.Message, *want.FinishReason)
			}
			if pp := w.request.Postprocess; pp == nil || !pp.Chat || len(pp.Tools) == 0 && !strings.Contains(o.extra, "required") {
				t.Fatalf("the worker's request carries postprocess %+v", pp)
			}
			if strings.Contains(o.extra, "STOP") && (w.stops != 1 || str(got.Message.Content) != "The answer, then ") {
				t.Errorf("stop string: content %q, %d early stops; want the text before it and the engine stopped", str(got.Message.Content), w.stops)
			}
		}
	}
}

// deltas folds postprocessed outputs into the text a client reads.
type deltas struct {
	content, reasoning strings.Builder
	calls              []backend.ToolCallDelta
	finish             *backend.FinishReason
}

func (d *deltas) add(o *backend.Output) {
	if o.Text != nil {
		d.content.WriteString(*o.Text)
	}
	if o.ReasoningText != nil {
		d.reasoning.WriteString(*o.ReasoningText)
	}
	for _, c := range o.ToolCalls {
		if c.Index == len(d.calls) {
			d.calls = append(d.calls, backend.ToolCallDelta{Index: c.Index, Name: c.Name})
		}
		d.calls[c.Index].Arguments += c.Arguments
	}
	if o.FinishReason != nil {
		d.finish = o.FinishReason
	}
}

// A migrated request's Postprocessor rebuilds the broken attempt's state
// from the tokens that attempt generated (the prompt's last
// MigratedTokens ids, min_tokens lowered by as many): what it shows
// after them, added to what the broken attempt showed, is the
// uninterrupted answer, wherever the break fell (inside the reasoning,
// inside a tool call, inside a character).
func TestPostprocessorResumesAMigratedRequest(t *testing.T) {
	m := parserModel(t, "deepseek_r1", "hermes")
	text := `Plan: é🙂 call.</think>Sure. <tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call> done STOP never`
	ids := encodeIDs(t, m, text)
	req := m.buildRequest(encodeIDs(t, m, "prompt"), options{stop: &openai.Stop{Strings: []string{"STOP"}}}, &openai.CommonExt{})
	req.StopConditions.MinTokens = backend.Ptr[uint32](3)
	req.Postprocess = postprocessOf(validChat(t, toolBody("")))
	// run feeds ids to a Postprocessor of r, then the engine's EOS unless
	// the stream broke.
	run := func(r *backend.Request, ids []uint32, d *deltas, broke bool) {
		pp, err := m.NewPostprocessor(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			outs, done, err := pp.Process(backend.Tokens(id))
			if err != nil {
				t.Fatal(err)
			}
			for _, out := range outs {
				d.add(out)
			}
			if done {
				return
			}
		}
		if broke {
			return
		}
		outs, _, err := pp.Process(backend.EOS())
		if err != nil {
			t.Fatal(err)
		}
		for _, out := range outs {
			d.add(out)
		}
	}
	var want deltas
	run(req, ids, &want, false)
	if want.finish == nil || want.finish.Kind != backend.FinishStop || len(want.calls) != 1 || want.content.String() != "Sure.  done " {
		t.Fatalf("uninterrupted: content %q, reasoning %q, calls %+v, finish %v", want.content.String(), want.reasoning.String(), want.calls, want.finish)
	}
	for k := 1; k < len(ids)-4; k++ {
		var got deltas
		run(req, ids[:k], &got, true) // the attempt that broke after k tokens
		resumed := *req
		resumed.TokenIDs = append(append([]uint32(nil), req.TokenIDs...), ids[:k]...)
		resumed.MigratedTokens = k
		resumed.StopConditions.MinTokens = backend.Ptr(uint32(max(0, 3-k)))
		run(&resumed, ids[k:], &got, false)
		if got.content.String() != want.content.String() || got.reasoning.String() != want.reasoning.String() ||
			len(got.calls) != 1 || got.calls[0].Name != "get_weather" || got.calls[0].Arguments != want.calls[0].Arguments ||
			got.finish == nil || got.finish.Kind != backend.FinishStop {
			t.Fatalf("break after %d tokens: content %q reasoning %q calls %+v finish %v; want %q %q %+v",
				k, got.content.String(), got.reasoning.String(), got.calls, got.finish, want.content.String(), want.reasoning.String(), want.calls)
		}
	}
}
