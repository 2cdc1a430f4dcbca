package preprocessor

import (
	"context"
	"sync"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// interleaved is a next stage that streams several choices of one
// request, as an engine serving n > 1 does: one output per token, each
// with its choice's index, in the order turns gives (turns[k] is the
// choice of the k-th output), each choice ending with its own terminal
// output once its ids run out. A stop from the caller ends the choices
// still going with cancelled.
type interleaved struct {
	ids    [][]uint32
	finish []backend.FinishKind
	turns  []int

	mu      sync.Mutex
	stopped bool
}

func (g *interleaved) Generate(ctx context.Context, _ *backend.Request, emit func(*backend.Output) error) error {
	rc, _ := runtime.FromContext(ctx)
	sent := make([]int, len(g.ids))
	done := make([]bool, len(g.ids))
	out := func(i int, o *backend.Output) error {
		o.Index = backend.Ptr(uint32(i))
		return emit(o)
	}
	for _, i := range g.turns {
		if rc != nil && rc.IsStopped() {
			g.mu.Lock()
			g.stopped = true
			g.mu.Unlock()
			for j := range g.ids {
				if !done[j] {
					if err := out(j, backend.Cancelled()); err != nil {
						return err
					}
				}
			}
			return nil
		}
		if done[i] {
			continue
		}
		if sent[i] < len(g.ids[i]) {
			if err := out(i, backend.Tokens(g.ids[i][sent[i]])); err != nil {
				return err
			}
			sent[i]++
			continue
		}
		done[i] = true
		if err := out(i, backend.Finish(g.finish[i])); err != nil {
			return err
		}
	}
	return nil
}

// turns returns a schedule that takes the choices of ids in a fixed,
// uneven rotation (choice 1 twice as often as choice 0 early on), with
// room for every token and terminal output.
func turns(ids [][]uint32) []int {
	var out []int
	total := 0
	for _, s := range ids {
		total += len(s) + 1
	}
	pattern := []int{1, 0, 1, 1, 0}
	for k := 0; len(out) < 3*total; k++ {
		out = append(out, pattern[k%len(pattern)]%len(ids))
	}
	return out
}

// choiceView is one choice as a client reads it from the chunks.
type choiceView struct {
	content string
	finish  string
	roles   int // chunks that carried the role
	chunks  int
}

// TestChatNStreamed streams n = 2 from an engine that interleaves the two
// choices: each choice's chunks carry its index, its role once, its own
// text and finish reason, and a stop string that ends choice 0 leaves
// choice 1 going (the engine is not stopped). The usage adds the two up.
func TestChatNStreamed(t *testing.T) {
	m := demoModel(t)
	texts := []string{"Hello world again and again", "Greetings, friend of the world"}
	ids := [][]uint32{encodeIDs(t, m, texts[0]), encodeIDs(t, m, texts[1])}
	eng := &interleaved{ids: ids, finish: []backend.FinishKind{backend.FinishLength, backend.FinishLength}, turns: turns(ids)}
	body := `{"model":"demo","messages":[{"role":"user","content":"hi"}],"n":2,"stream":true,"stream_options":{"include_usage":true},"stop":"o wor"}`
	views := map[int]*choiceView{}
	var order []int
	var usage *openai.Usage
	statTokens := 0
	err := m.Chat(context.Background(), "n2", decodeChat(t, body), eng, func(ev Event) error {
		c := ev.Data.(*openai.ChatCompletionChunk)
		statTokens += ev.Stats.Tokens
		if c.Usage != nil {
			usage = c.Usage
		}
		for _, ch := range c.Choices {
			v := views[ch.Index]
			if v == nil {
				v = &choiceView{}
				views[ch.Index] = v
			}
			v.chunks++
			order = append(order, ch.Index)
			if ch.Delta.Role == "assistant" {
				v.roles++
			}
			if ch.Delta.Content != nil {
				v.content += *ch.Delta.Content
			}
			if ch.FinishReason != nil {
				if v.finish != "" {
					t.Errorf("choice %d finished twice", ch.Index)
				}
				v.finish = *ch.FinishReason
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(views) != 2 {
		t.Fatalf("choices %v, want 0 and 1", views)
	}
	want := []choiceView{{content: "Hell", finish: "stop"}, {content: texts[1], finish: "length"}}
	for i, w := range want {
		v := views[i]
		if v.content != w.content || v.finish != w.finish || v.roles != 1 {
			t.Errorf("choice %d: content %q finish %q (role on %d chunks), want %q %q", i, v.content, v.finish, v.roles, w.content, w.finish)
		}
	}
	if !interleavedOrder(order) {
		t.Errorf("chunk order by choice %v: want the choices interleaved as the engine sent them", order)
	}
	if eng.stopped {
		t.Error("the engine was stopped while choice 1 was still going")
	}
	// The usage is what each choice alone would count.
	alone := 0
	for i, text := range texts {
		single := `{"model":"demo","messages":[{"role":"user","content":"hi"}],"stop":"o wor"}`
		resp, err := m.ChatUnary(context.Background(), "n1", decodeChat(t, single), &scripted{ids: encodeIDs(t, m, text), finish: backend.FinishLength})
		if err != nil {
			t.Fatal(err)
		}
		if got := *resp.Choices[0].Message.Content; got != want[i].content {
			t.Fatalf("choice %d alone: %q, want %q", i, got, want[i].content)
		}
		alone += resp.Usage.CompletionTokens
	}
	if usage == nil || usage.CompletionTokens != alone || usage.TotalTokens != usage.PromptTokens+alone || statTokens != alone {
		t.Errorf("usage %+v (chunk stats %d), want %d completion tokens, the two choices' sum", usage, statTokens, alone)
	}
}

// interleavedOrder reports whether choice 1 shows up before choice 0's
// last chunk.
func interleavedOrder(order []int) bool {
	last0 := -1
	for k, i := range order {
		if i == 0 {
			last0 = k
		}
	}
	for k, i := range order {
		if i == 1 && k < last0 {
			return true
		}
	}
	return false
}

// When every choice stopped locally, the engine is told to stop; the
// unary answer has both choices, in index order, each with its finish
// reason, and the usage sums them.
func TestChatNUnaryStopsWhenAllChoicesStopped(t *testing.T) {
	m := demoModel(t)
	texts := []string{"one two three. four five", "six. seven eight nine ten eleven"}
	ids := [][]uint32{encodeIDs(t, m, texts[0]), encodeIDs(t, m, texts[1])}
	eng := &interleaved{ids: ids, finish: []backend.FinishKind{backend.FinishLength, backend.FinishLength}, turns: turns(ids)}
	body := `{"model":"demo","messages":[{"role":"user","content":"hi"}],"n":2,"stop":"."}`
	resp, err := m.ChatUnary(context.Background(), "n2", decodeChat(t, body), eng)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 2 {
		t.Fatalf("%d choices", len(resp.Choices))
	}
	for i, want := range []string{"one two three", "six"} {
		ch := resp.Choices[i]
		if ch.Index != i || *ch.Message.Content != want || *ch.FinishReason != "stop" {
			t.Errorf("choice %d: index %d content %q finish %s", i, ch.Index, *ch.Message.Content, *ch.FinishReason)
		}
	}
	if !eng.stopped {
		t.Error("both choices stopped on a stop string, but the engine was not stopped")
	}
	if resp.Usage.CompletionTokens < 2 || resp.Usage.CompletionTokens > len(ids[0])+len(ids[1]) {
		t.Errorf("usage %+v", resp.Usage)
	}
}

// n = 2 with a tool parser: each choice has its own parser, so one choice
// may call a tool (finish tool_calls) while the other answers in text.
func TestChatNChoicesParseApart(t *testing.T) {
	m := parserModel(t, "", "hermes")
	texts := []string{`<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>`, "No call here."}
	ids := [][]uint32{encodeIDs(t, m, texts[0]), encodeIDs(t, m, texts[1])}
	eng := &interleaved{ids: ids, finish: []backend.FinishKind{backend.FinishEOS, backend.FinishEOS}, turns: turns(ids)}
	var acc ChatAccumulator
	err := m.Chat(context.Background(), "n2", validChat(t, toolBody(`,"n":2,"stream":true`)), eng, func(ev Event) error {
		if c, ok := ev.Data.(*openai.ChatCompletionChunk); ok {
			for _, ch := range c.Choices {
				for _, tc := range ch.Delta.ToolCalls {
					if ch.Index != 0 || *tc.Index != 0 {
						t.Errorf("choice %d has a tool call delta of call %d", ch.Index, *tc.Index)
					}
				}
			}
			acc.Add(c)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r := acc.Result()
	if len(r.Choices) != 2 || len(r.Choices[0].Message.ToolCalls) != 1 || *r.Choices[0].FinishReason != openai.FinishToolCalls ||
		str(r.Choices[1].Message.Content) != texts[1] || *r.Choices[1].FinishReason != "stop" {
		t.Errorf("choices %+v", r.Choices)
	}
}
