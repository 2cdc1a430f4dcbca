package preprocessor

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/openai"
)

// parserModel is the demo model with the output parsers a worker's
// --dyn-reasoning-parser and --dyn-tool-call-parser would publish.
func parserModel(t *testing.T, reasoning, tools string) *Model {
	t.Helper()
	m := demoModel(t)
	m.lookupParsers(modelcard.RuntimeConfig{ReasoningParser: reasoning, ToolCallParser: tools})
	if err := m.ParserError(); err != nil {
		t.Fatal(err)
	}
	return m
}

const weatherTool = `{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`

func toolBody(extra string) string {
	return `{"model":"demo","messages":[{"role":"user","content":"weather in Paris?"}],"tools":[` + weatherTool + `]` + extra + `}`
}

// chatChunks runs a streamed chat request against an engine that says
// text, and returns the chunks with choices.
func chatChunks(t *testing.T, m *Model, body, text string) ([]*openai.ChatCompletionChunk, *scripted) {
	t.Helper()
	eng := &scripted{ids: encodeIDs(t, m, text), finish: backend.FinishEOS}
	var chunks []*openai.ChatCompletionChunk
	err := m.Chat(context.Background(), "r", validChat(t, body), eng, func(ev Event) error {
		if c, ok := ev.Data.(*openai.ChatCompletionChunk); ok && ev.Name == "" && len(c.Choices) > 0 {
			chunks = append(chunks, keepChunk(t, c))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return chunks, eng
}

// keepChunk copies c whole: Chat fills the same chunk again once emit
// returns.
func keepChunk(t *testing.T, c *openai.ChatCompletionChunk) *openai.ChatCompletionChunk {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var k openai.ChatCompletionChunk
	if err := json.Unmarshal(b, &k); err != nil {
		t.Fatal(err)
	}
	return &k
}

// validChat decodes and validates a chat body as the frontend does.
func validChat(t *testing.T, body string) *openai.ChatCompletionRequest {
	t.Helper()
	r, err := openai.DecodeChat([]byte(body), openai.DecodeOptions{})
	if err != nil {
		t.Fatalf("request %s: %v", body, err)
	}
	return r
}

// argsOf decodes a tool call's arguments, a JSON string holding an object.
func argsOf(t *testing.T, tc openai.ToolCall) map[string]any {
	t.Helper()
	var s string
	if err := json.Unmarshal(tc.Function.Arguments, &s); err != nil {
		t.Fatalf("arguments %s are not a JSON string: %v", tc.Function.Arguments, err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("arguments %q are not a JSON object: %v", s, err)
	}
	return m
}

func TestReasoningThenToolCallStreamed(t *testing.T) {
	m := parserModel(t, "deepseek_r1", "hermes")
	text := `The user wants weather.</think>Let me check.<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>`
	chunks, _ := chatChunks(t, m, toolBody(""), text)
	var reasoning, content strings.Builder
	var calls []openai.ToolCall
	for _, c := range chunks {
		d := c.Choices[0].Delta
		if d.ReasoningContent != nil {
			reasoning.WriteString(*d.ReasoningContent)
		}
		if d.Content != nil {
			content.WriteString(*d.Content)
			if strings.Contains(*d.Content, "tool_call") || strings.Contains(*d.Content, "get_weather") {
				t.Errorf("call text leaked into content: %q", *d.Content)
			}
		}
		calls = append(calls, d.ToolCalls...)
	}
	if reasoning.String() != "The user wants weather." || strings.TrimSpace(content.String()) != "Let me check." {
		t.Errorf("reasoning %q, content %q", reasoning.String(), content.String())
	}
	// One call in fragments, as OpenAI streams one: the first delta has
	// the index, the id, the type and the name, the later ones the index
	// and more of the arguments.
	if len(calls) < 2 {
		t.Fatalf("tool call deltas %+v, want the call in fragments", calls)
	}
	first := calls[0]
	if first.Index == nil || *first.Index != 0 || !strings.HasPrefix(first.ID, "call_") || len(first.ID) != 29 || first.Type != "function" || first.Function.Name != "get_weather" {
		t.Errorf("first delta %+v", first)
	}
	var args strings.Builder
	for i, tc := range calls {
		var frag string
		if err := json.Unmarshal(tc.Function.Arguments, &frag); err != nil {
			t.Fatalf("delta %d: arguments %s are not a JSON string", i, tc.Function.Arguments)
		}
		args.WriteString(frag)
		if i > 0 && (tc.Index == nil || *tc.Index != 0 || tc.ID != "" || tc.Type != "" || tc.Function.Name != "") {
			t.Errorf("delta %d %+v: want only the index and arguments", i, tc)
		}
	}
	if args.String() != `{"city":"Paris"}` {
		t.Errorf("arguments %q", args.String())
	}
	last := chunks[len(chunks)-1].Choices[0]
	if last.FinishReason == nil || *last.FinishReason != openai.FinishToolCalls {
		t.Errorf("finish reason %v, want tool_calls", last.FinishReason)
	}
}

func TestToolCallsFoldIntoTheUnaryMessage(t *testing.T) {
	m := parserModel(t, "", "hermes")
	text := `<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>`
	eng := &scripted{ids: encodeIDs(t, m, text), finish: backend.FinishEOS}
	resp, err := m.ChatUnary(context.Background(), "u", validChat(t, toolBody("")), eng)
	if err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	if ch.Message.Content != nil || len(ch.Message.ToolCalls) != 1 || *ch.FinishReason != openai.FinishToolCalls {
		t.Fatalf("message %+v, finish %s", ch.Message, *ch.FinishReason)
	}
	tc := ch.Message.ToolCalls[0]
	if tc.Index != nil || tc.Function.Name != "get_weather" || argsOf(t, tc)["city"] != "Paris" {
		t.Errorf("tool call %+v", tc)
	}
}

func TestToolCallParsingNeedsToolsAndAuto(t *testing.T) {
	m := parserModel(t, "", "hermes")
	text := `<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>`
	for _, body := range []string{
		toolBody(`,"tool_choice":"none"`),
		`{"model":"demo","messages":[{"role":"user","content":"hi"}]}`,
	} {
		eng := &scripted{ids: encodeIDs(t, m, text), finish: backend.FinishEOS}
		resp, err := m.ChatUnary(context.Background(), "u", validChat(t, body), eng)
		if err != nil {
			t.Fatal(err)
		}
		ch := resp.Choices[0]
		if ch.Message.Content == nil || *ch.Message.Content != text || len(ch.Message.ToolCalls) != 0 || *ch.FinishReason != "stop" {
			t.Errorf("%s: message %+v, want the text as content", body, ch.Message)
		}
	}
}

func TestMalformedToolCallIsReturnedAsText(t *testing.T) {
	m := parserModel(t, "", "hermes")
	text := `<tool_call>{"name": "get_weather", "arguments": {"city": </tool_call>`
	eng := &scripted{ids: encodeIDs(t, m, text), finish: backend.FinishEOS}
	resp, err := m.ChatUnary(context.Background(), "u", validChat(t, toolBody("")), eng)
	if err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	if ch.Message.Content == nil || !strings.Contains(*ch.Message.Content, `"city": `) || len(ch.Message.ToolCalls) != 0 || *ch.FinishReason != "stop" {
		t.Errorf("message %+v, want the malformed call as text", ch.Message)
	}
}

func TestToolChoiceRequiredAndNamed(t *testing.T) {
	m := demoModel(t) // no parser: guided JSON is parsed as such
	cases := []struct {
		name, choice, text string
		want               string // arguments' city; "" for no call
	}{
		{"required", `"required"`, `[{"name": "get_weather", "parameters": {"city": "Paris"}}]`, "Paris"},
		{"named", `{"type":"function","function":{"name":"get_weather"}}`, `{"city": "Oslo"}`, "Oslo"},
		{"required, not JSON", `"required"`, `I would rather not.`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eng := &scripted{ids: encodeIDs(t, m, c.text), finish: backend.FinishEOS}
			resp, err := m.ChatUnary(context.Background(), "u", validChat(t, toolBody(`,"tool_choice":`+c.choice)), eng)
			if err != nil {
				t.Fatal(err)
			}
			g := eng.requests[0].SamplingOptions.GuidedDecoding
			if !strings.Contains(string(g), `"json"`) || !strings.Contains(string(g), `city`) {
				t.Errorf("guided decoding %s, want the tool's JSON schema", g)
			}
			ch := resp.Choices[0]
			if c.want == "" {
				if len(ch.Message.ToolCalls) != 0 || ch.Message.Content == nil || *ch.Message.Content != c.text {
					t.Errorf("message %+v, want the text back", ch.Message)
				}
				return
			}
			if len(ch.Message.ToolCalls) != 1 || *ch.FinishReason != openai.FinishToolCalls {
				t.Fatalf("message %+v finish %s", ch.Message, *ch.FinishReason)
			}
			tc := ch.Message.ToolCalls[0]
			if tc.Function.Name != "get_weather" || argsOf(t, tc)["city"] != c.want {
				t.Errorf("tool call %+v", tc)
			}
		})
	}
}

// Streamed, the deprecated functions API gets delta.function_call: the
// name with the first fragment of the arguments, then the rest.
func TestLegacyFunctionCallStreamed(t *testing.T) {
	m := parserModel(t, "", "hermes")
	body := `{"model":"demo","messages":[{"role":"user","content":"weather?"}],"functions":[{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]}`
	text := `Sure.<tool_call>{"name": "get_weather", "arguments": {"city": "Rome", "unit": "celsius"}}</tool_call>`
	chunks, _ := chatChunks(t, m, body, text)
	var fcs []*openai.FunctionCall
	var finish string
	for _, c := range chunks {
		d := c.Choices[0].Delta
		if len(d.ToolCalls) > 0 {
			t.Errorf("tool_calls %+v in a functions API answer", d.ToolCalls)
		}
		if d.FunctionCall != nil {
			fcs = append(fcs, d.FunctionCall)
		}
		if fr := c.Choices[0].FinishReason; fr != nil {
			finish = *fr
		}
	}
	if len(fcs) < 2 || fcs[0].Name != "get_weather" || finish != openai.FinishFunctionCall {
		t.Fatalf("function_call deltas %+v, finish %q", fcs, finish)
	}
	var args strings.Builder
	for i, fc := range fcs {
		if i > 0 && fc.Name != "" {
			t.Errorf("delta %d names the function again", i)
		}
		var frag string
		if err := json.Unmarshal(fc.Arguments, &frag); err != nil {
			t.Fatal(err)
		}
		args.WriteString(frag)
	}
	if args.String() != `{"city":"Rome","unit":"celsius"}` {
		t.Errorf("arguments %q", args.String())
	}
}

// parallel_tool_calls false keeps the first call, streamed and unary; the
// derived schema of tool_choice required allows one call.
func TestParallelToolCallsFalse(t *testing.T) {
	m := parserModel(t, "", "hermes")
	text := `<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>` + "\n" +
		`<tool_call>{"name": "get_weather", "arguments": {"city": "Lima"}}</tool_call>`
	for _, extra := range []string{"", `,"parallel_tool_calls":false`} {
		eng := &scripted{ids: encodeIDs(t, m, text), finish: backend.FinishEOS}
		resp, err := m.ChatUnary(context.Background(), "u", validChat(t, toolBody(extra)), eng)
		if err != nil {
			t.Fatal(err)
		}
		calls := resp.Choices[0].Message.ToolCalls
		want := 2
		if extra != "" {
			want = 1
		}
		if len(calls) != want || argsOf(t, calls[0])["city"] != "Oslo" || *resp.Choices[0].FinishReason != openai.FinishToolCalls {
			t.Errorf("%q: calls %+v, want %d, the first Oslo", extra, calls, want)
		}
		chunks, _ := chatChunks(t, m, toolBody(extra), text)
		for _, c := range chunks {
			for _, tc := range c.Choices[0].Delta.ToolCalls {
				if *tc.Index >= want {
					t.Errorf("%q: streamed delta of call %d", extra, *tc.Index)
				}
			}
		}
	}
	eng := &scripted{ids: encodeIDs(t, m, `[{"name": "get_weather", "parameters": {"city": "Oslo"}}]`), finish: backend.FinishEOS}
	if _, err := m.ChatUnary(context.Background(), "u", validChat(t, toolBody(`,"tool_choice":"required","parallel_tool_calls":false`)), eng); err != nil {
		t.Fatal(err)
	}
	var g struct {
		JSON struct {
			MaxItems *int `json:"maxItems"`
		} `json:"json"`
	}
	if err := json.Unmarshal(eng.requests[0].SamplingOptions.GuidedDecoding, &g); err != nil || g.JSON.MaxItems == nil || *g.JSON.MaxItems != 1 {
		t.Errorf("guided decoding %s, want a schema of at most one call", eng.requests[0].SamplingOptions.GuidedDecoding)
	}
}

// The guided JSON of tool_choice required and named streams as it comes,
// not at the end.
func TestGuidedToolCallsStream(t *testing.T) {
	m := demoModel(t)
	for _, c := range []struct{ choice, text string }{
		{`"required"`, `[{"name": "get_weather", "parameters": {"city": "Paris, the capital of France"}}]`},
		{`{"type":"function","function":{"name":"get_weather"}}`, `{"city": "Paris, the capital of France"}`},
	} {
		chunks, _ := chatChunks(t, m, toolBody(`,"tool_choice":`+c.choice), c.text)
		var deltas int
		for _, ch := range chunks {
			deltas += len(ch.Choices[0].Delta.ToolCalls)
		}
		if deltas < 3 {
			t.Errorf("%s: %d tool call deltas, want the arguments in fragments", c.choice, deltas)
		}
	}
}

func TestLegacyFunctionCall(t *testing.T) {
	m := parserModel(t, "", "hermes")
	body := `{"model":"demo","messages":[{"role":"user","content":"weather?"}],"functions":[{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]}`
	text := `<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>`
	eng := &scripted{ids: encodeIDs(t, m, text), finish: backend.FinishEOS}
	resp, err := m.ChatUnary(context.Background(), "u", validChat(t, body), eng)
	if err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	fc := ch.Message.FunctionCall
	if fc == nil || fc.Name != "get_weather" || len(ch.Message.ToolCalls) != 0 || *ch.FinishReason != openai.FinishFunctionCall {
		t.Fatalf("message %+v finish %s, want a function_call", ch.Message, *ch.FinishReason)
	}
	if got := argsOf(t, openai.ToolCall{Function: *fc}); got["city"] != "Rome" {
		t.Errorf("arguments %v", got)
	}
}

func TestThinkingOff(t *testing.T) {
	m := parserModel(t, "deepseek_r1", "")
	text := "Just the answer."
	for _, extra := range []string{`,"chat_template_args":{"enable_thinking":false}`, `,"thinking":{"type":"disabled"}`} {
		body := `{"model":"demo","messages":[{"role":"user","content":"hi"}]` + extra + `}`
		eng := &scripted{ids: encodeIDs(t, m, text), finish: backend.FinishEOS}
		resp, err := m.ChatUnary(context.Background(), "u", validChat(t, body), eng)
		if err != nil {
			t.Fatal(err)
		}
		msg := resp.Choices[0].Message
		if msg.ReasoningContent != nil || msg.Content == nil || *msg.Content != text {
			t.Errorf("%s: message %+v, want all content", extra, msg)
		}
	}
	// Thinking on: deepseek_r1 reads the same text as reasoning.
	eng := &scripted{ids: encodeIDs(t, m, text), finish: backend.FinishEOS}
	resp, err := m.ChatUnary(context.Background(), "u", validChat(t, `{"model":"demo","messages":[{"role":"user","content":"hi"}]}`), eng)
	if err != nil {
		t.Fatal(err)
	}
	if msg := resp.Choices[0].Message; msg.ReasoningContent == nil || *msg.ReasoningContent != text {
		t.Errorf("message %+v, want the text as reasoning", msg)
	}
}

// grouped streams fixed token ids in groups of random sizes, then EOS.
type grouped struct {
	ids []uint32
	rng *rand.Rand
}

func (g *grouped) Generate(_ context.Context, _ *backend.Request, emit func(*backend.Output) error) error {
	for i := 0; i < len(g.ids); {
		n := 1 + g.rng.IntN(4)
		if i+n > len(g.ids) {
			n = len(g.ids) - i
		}
		if err := emit(backend.Tokens(g.ids[i : i+n]...)); err != nil {
			return err
		}
		i += n
	}
	return emit(backend.Finish(backend.FinishEOS))
}

// For random splits of a model's output into engine outputs, the streamed
// deltas add up to the unary answer: the same reasoning, content and
// calls (ids aside), whatever the parsers held back on the way.
func TestStreamedDeltasAddUpToTheUnaryAnswer(t *testing.T) {
	outputs := []struct{ reasoning, tools, text string }{
		{"deepseek_r1", "hermes", `Plan: call twice.</think>Sure. <tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call> and <tool_call>{"name": "get_weather", "arguments": {"city": "Lima, \"Peru\""}}</tool_call> done`},
		{"qwen3", "hermes", `<think>hmm <tool_call> is a tag</think>Text with < and <tool and </tool_call> that is no call.`},
		{"", "hermes", `<tool_call>{"name": "get_weather", "arguments": {"city": </tool_call> broken`},
		{"gpt_oss", "harmony", `<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Rome"}<|call|>`},
		{"", "mistral", `[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Bern"}}]`},
		{"", "pythonic", `[get_weather(city="Nice", days=[1, 2])]`},
		{"", "llama3_json", `{"name": "get_weather", "parameters": {"city": "Quito"}}; {"name": "get_weather", "parameters": {"city": "Cusco"}} and text`},
		{"", "phi4", `Calling functools[{"name": "get_weather", "arguments": {"city": "Baku"}}] done`},
		{"", "deepseek_v3_1", "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"東京\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
		{"", "qwen3_coder", "<tool_call>\n<function=get_weather>\n<parameter=city>\nAccra\n</parameter>\n</function>\n</tool_call>"},
		{"", "hermes", `Cut short: <tool_call>{"name": "get_weather", "arguments": {"city": "Ber`},
	}
	rng := rand.New(rand.NewPCG(18, 7))
	for _, o := range outputs {
		m := parserModel(t, o.reasoning, o.tools)
		ids := encodeIDs(t, m, o.text)
		unary, err := m.ChatUnary(context.Background(), "u", validChat(t, toolBody("")), &grouped{ids: ids, rng: rng})
		if err != nil {
			t.Fatal(err)
		}
		want := unary.Choices[0]
		for round := 0; round < 20; round++ {
			var acc ChatAccumulator
			err := m.Chat(context.Background(), "s", validChat(t, toolBody("")), &grouped{ids: ids, rng: rng}, func(ev Event) error {
				if c, ok := ev.Data.(*openai.ChatCompletionChunk); ok && ev.Name == "" {
					acc.Add(c)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			got := acc.Result().Choices[0]
			for _, tc := range got.Message.ToolCalls {
				if !strings.HasPrefix(tc.ID, "call_") || tc.Type != "function" {
					t.Fatalf("folded call %+v: want its id and type from its first delta", tc)
				}
			}
			if str(got.Message.Content) != str(want.Message.Content) || str(got.Message.ReasoningContent) != str(want.Message.ReasoningContent) ||
				*got.FinishReason != *want.FinishReason || !sameCalls(got.Message.ToolCalls, want.Message.ToolCalls) {
				t.Fatalf("%s/%s %q, round %d:\nstreamed %+v\nunary    %+v", o.reasoning, o.tools, o.text, round, got.Message, want.Message)
			}
		}
		if o.tools != "" && len(want.Message.ToolCalls) == 0 && !strings.Contains(o.text, "broken") && !strings.Contains(o.text, "no call") {
			t.Errorf("%s %q: no tool call found", o.tools, o.text)
		}
	}
}

func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func sameCalls(a, b []openai.ToolCall) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Function.Name != b[i].Function.Name || string(a[i].Function.Arguments) != string(b[i].Function.Arguments) || a[i].Type != b[i].Type {
			return false
		}
	}
	return true
}

// oneOutput streams all its token ids in a single engine output.
type oneOutput struct{ ids []uint32 }

func (o oneOutput) Generate(_ context.Context, _ *backend.Request, emit func(*backend.Output) error) error {
	if err := emit(backend.Tokens(o.ids...)); err != nil {
		return err
	}
	return emit(backend.Finish(backend.FinishEOS))
}

// Text, a call and text decided in one step go out as chunks in output
// order: a chunk's content comes before its tool calls, so the text after
// a call gets a chunk of its own (a client such as the Responses builder
// reads a chunk's content first).
func TestTextAfterACallGetsItsOwnChunk(t *testing.T) {
	m := parserModel(t, "", "hermes")
	text := `Checking. <tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call> Done.`
	var got []string
	err := m.Chat(context.Background(), "o", validChat(t, toolBody(`,"stream":true`)), oneOutput{ids: encodeIDs(t, m, text)}, func(ev Event) error {
		c, ok := ev.Data.(*openai.ChatCompletionChunk)
		if !ok || len(c.Choices) == 0 {
			return nil
		}
		d := c.Choices[0].Delta
		if d.Content != nil {
			got = append(got, "content "+*d.Content)
		}
		for _, tc := range d.ToolCalls {
			got = append(got, "call "+tc.Function.Name+" "+string(tc.Function.Arguments))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"content Checking. ", `call get_weather "{\"city\":\"Oslo\"}"`, "content  Done."}
	if !slices.Equal(got, want) {
		t.Errorf("deltas in order %q, want %q", got, want)
	}
}
