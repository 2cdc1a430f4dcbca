package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// The canned answers of the mockers in TestToolsAndReasoning, keyed by a
// phrase of the prompt: what a reasoning model with Hermes-style tool
// calls (Qwen3, say) would say.
var cannedAnswers = []object{
	{"prompt_contains": "weather in Paris", "text": `The user wants the weather; I will call the tool.</think>Let me check.<tool_call>
{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}
</tool_call>`},
	{"prompt_contains": "two cities", "text": `<tool_call>
{"name": "get_weather", "arguments": {"city": "Oslo"}}
</tool_call>
<tool_call>
{"name": "get_weather", "arguments": {"city": "Lima"}}
</tool_call>`},
	{"prompt_contains": "a broken call", "text": `<tool_call>{"name": "get_weather", "arguments": {"city": </tool_call>`},
	{"prompt_contains": "meaning of life", "text": `Deep thought takes a while.</think>The answer is 42.`},
	// Satisfies tool_choice required's schema, so the mocker says it.
	{"prompt_contains": "guided Oslo", "text": `[{"name": "get_weather", "parameters": {"city": "Oslo", "unit": "celsius"}}]`},
}

var weatherTool = openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
	Name:        "get_weather",
	Description: openai.String("Current weather in a city"),
	Parameters: openai.FunctionParameters{
		"type": "object",
		"properties": map[string]any{
			"city": map[string]any{"type": "string"},
			"unit": map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}},
		},
		"required": []string{"city"},
	},
})

// TestToolsAndReasoning serves two models from mockers that say canned
// answers: "thinker" with the deepseek_r1 reasoning parser and the hermes
// tool-call parser, "tooler" with the hermes parser only. Through the
// official SDK and raw HTTP it checks tool calls streamed (in argument
// fragments) and unary, parallel calls and parallel_tool_calls false, a
// malformed call returned as text, reasoning then a call, tool_choice
// required and named (the mocker honours the guided JSON schema, over a
// canned answer that does not satisfy it), the deprecated functions API
// unary and streamed, the Responses API unary and streamed through the
// SDK's Responses client, and n = 3 with logprobs unary and streamed.
func TestToolsAndReasoning(t *testing.T) {
	c := newCluster(t, "etcd", "tcp")
	b, err := json.Marshal(cannedAnswers)
	if err != nil {
		t.Fatal(err)
	}
	canned := filepath.Join(t.TempDir(), "canned.json")
	if err := os.WriteFile(canned, b, 0o644); err != nil {
		t.Fatal(err)
	}
	c.startMocker("thinker", []string{"--model-name", "thinker", "--speedup-ratio", "200", "--canned-responses", canned,
		"--dyn-tool-call-parser", "hermes", "--dyn-reasoning-parser", "deepseek_r1"})
	c.startMocker("tooler", []string{"--model-name", "tooler", "--speedup-ratio", "200", "--canned-responses", canned,
		"--dyn-tool-call-parser", "hermes"})
	f := c.startFrontend()
	f.waitModels(t, "thinker", "tooler")

	t.Run("reasoning then a tool call, unary", func(t *testing.T) {
		body := object{"model": "thinker", "max_tokens": 200, "tools": []any{weatherTool},
			"messages": []object{{"role": "user", "content": "What is the weather in Paris?"}}}
		resp, raw := f.post(t, "/v1/chat/completions", body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", resp.StatusCode, raw)
		}
		var r struct {
			Choices []struct {
				Message struct {
					Content          *string `json:"content"`
					ReasoningContent string  `json:"reasoning_content"`
					ToolCalls        []struct {
						ID       string `json:"id"`
						Type     string `json:"type"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		m := r.Choices[0].Message
		if m.ReasoningContent != "The user wants the weather; I will call the tool." || m.Content == nil || strings.TrimSpace(*m.Content) != "Let me check." {
			t.Errorf("reasoning %q, content %v: %s", m.ReasoningContent, m.Content, raw)
		}
		if len(m.ToolCalls) != 1 || m.ToolCalls[0].Type != "function" || m.ToolCalls[0].ID == "" || m.ToolCalls[0].Function.Name != "get_weather" ||
			!jsonEqual(m.ToolCalls[0].Function.Arguments, `{"city":"Paris","unit":"celsius"}`) || r.Choices[0].FinishReason != "tool_calls" {
			t.Errorf("tool calls / finish: %s", raw)
		}
	})

	t.Run("tool call streamed through the SDK", func(t *testing.T) {
		stream := f.sdk.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{
			Model:     "thinker",
			Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the weather in Paris?")},
			Tools:     []openai.ChatCompletionToolUnionParam{weatherTool},
			MaxTokens: openai.Int(200),
		})
		defer stream.Close()
		var acc openai.ChatCompletionAccumulator
		var reasoning, finish string
		fragments := 0
		for stream.Next() {
			chunk := stream.Current()
			acc.AddChunk(chunk)
			for _, ch := range chunk.Choices {
				for _, tc := range ch.Delta.ToolCalls {
					fragments++
					if fragments == 1 && (tc.ID == "" || tc.Function.Name != "get_weather" || tc.Type != "function") {
						t.Errorf("first tool call delta %s: want its id, type and name", tc.RawJSON())
					}
					if fragments > 1 && (tc.ID != "" || tc.Function.Name != "") {
						t.Errorf("later tool call delta %s: want the index and arguments only", tc.RawJSON())
					}
				}
				if f, ok := ch.Delta.JSON.ExtraFields["reasoning_content"]; ok {
					var s string
					_ = json.Unmarshal([]byte(f.Raw()), &s)
					reasoning += s
				}
				if ch.Delta.Content != "" && strings.Contains(ch.Delta.Content, "tool_call") {
					t.Errorf("call markup leaked into content: %q", ch.Delta.Content)
				}
				if ch.FinishReason != "" {
					finish = ch.FinishReason
				}
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		msg := acc.Choices[0].Message
		if reasoning != "The user wants the weather; I will call the tool." || finish != "tool_calls" || fragments < 2 {
			t.Errorf("streamed reasoning %q, finish %q, %d tool call deltas (want the arguments in fragments)", reasoning, finish, fragments)
		}
		if len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Name != "get_weather" || !jsonEqual(msg.ToolCalls[0].Function.Arguments, `{"city":"Paris","unit":"celsius"}`) {
			t.Errorf("accumulated tool calls %+v", msg.ToolCalls)
		}
	})

	t.Run("parallel calls", func(t *testing.T) {
		c, err := f.sdk.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
			Model:    "tooler",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in two cities, please.")},
			Tools:    []openai.ChatCompletionToolUnionParam{weatherTool},
		})
		if err != nil {
			t.Fatal(err)
		}
		calls := c.Choices[0].Message.ToolCalls
		if len(calls) != 2 || !jsonEqual(calls[0].Function.Arguments, `{"city":"Oslo"}`) || !jsonEqual(calls[1].Function.Arguments, `{"city":"Lima"}`) ||
			calls[0].ID == calls[1].ID || c.Choices[0].FinishReason != "tool_calls" {
			t.Errorf("message %+v, finish %q", c.Choices[0].Message, c.Choices[0].FinishReason)
		}
		// parallel_tool_calls false: the first call only.
		c, err = f.sdk.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
			Model:             "tooler",
			Messages:          []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in two cities, please.")},
			Tools:             []openai.ChatCompletionToolUnionParam{weatherTool},
			ParallelToolCalls: openai.Bool(false),
		})
		if err != nil {
			t.Fatal(err)
		}
		if calls := c.Choices[0].Message.ToolCalls; len(calls) != 1 || !jsonEqual(calls[0].Function.Arguments, `{"city":"Oslo"}`) {
			t.Errorf("parallel_tool_calls false: calls %+v, want the first only", calls)
		}
	})

	t.Run("a malformed call comes back as text", func(t *testing.T) {
		c, err := f.sdk.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
			Model:    "tooler",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Make a broken call.")},
			Tools:    []openai.ChatCompletionToolUnionParam{weatherTool},
		})
		if err != nil {
			t.Fatal(err)
		}
		m := c.Choices[0].Message
		if len(m.ToolCalls) != 0 || !strings.Contains(m.Content, `"city": `) || c.Choices[0].FinishReason != "stop" {
			t.Errorf("message %+v, finish %q: want the text back", m, c.Choices[0].FinishReason)
		}
	})

	t.Run("tool_choice required and named", func(t *testing.T) {
		for _, choice := range []openai.ChatCompletionToolChoiceOptionUnionParam{
			{OfAuto: openai.String("required")},
			openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_weather"}),
		} {
			c, err := f.sdk.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
				Model:      "tooler",
				Messages:   []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Anything at all.")},
				Tools:      []openai.ChatCompletionToolUnionParam{weatherTool},
				ToolChoice: choice,
				MaxTokens:  openai.Int(200),
			})
			if err != nil {
				t.Fatal(err)
			}
			calls := c.Choices[0].Message.ToolCalls
			if len(calls) == 0 || calls[0].Function.Name != "get_weather" || c.Choices[0].FinishReason != "tool_calls" {
				t.Fatalf("message %+v, finish %q: want a call of get_weather", c.Choices[0].Message, c.Choices[0].FinishReason)
			}
			var args map[string]any
			if err := json.Unmarshal([]byte(calls[0].Function.Arguments), &args); err != nil || args["city"] == nil {
				t.Errorf("arguments %q: want an object with the required city (%v)", calls[0].Function.Arguments, err)
			}
		}
	})

	// A canned answer that is not the required JSON loses to guided
	// decoding (the schema's instance: city "string"); one that is the
	// required JSON is said, and its call streams in fragments.
	t.Run("tool_choice required against canned answers", func(t *testing.T) {
		required := openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}
		c, err := f.sdk.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
			Model:      "tooler",
			Messages:   []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the weather in Paris?")},
			Tools:      []openai.ChatCompletionToolUnionParam{weatherTool},
			ToolChoice: required,
			MaxTokens:  openai.Int(200),
		})
		if err != nil {
			t.Fatal(err)
		}
		if calls := c.Choices[0].Message.ToolCalls; len(calls) != 1 || !jsonEqual(calls[0].Function.Arguments, `{"city":"string"}`) {
			t.Errorf("message %+v: want the guided instance's call", c.Choices[0].Message)
		}
		stream := f.sdk.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{
			Model:      "tooler",
			Messages:   []openai.ChatCompletionMessageParamUnion{openai.UserMessage("A guided Oslo call.")},
			Tools:      []openai.ChatCompletionToolUnionParam{weatherTool},
			ToolChoice: required,
			MaxTokens:  openai.Int(200),
		})
		defer stream.Close()
		var acc openai.ChatCompletionAccumulator
		fragments := 0
		for stream.Next() {
			acc.AddChunk(stream.Current())
			for _, ch := range stream.Current().Choices {
				fragments += len(ch.Delta.ToolCalls)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		calls := acc.Choices[0].Message.ToolCalls
		if len(calls) != 1 || !jsonEqual(calls[0].Function.Arguments, `{"city":"Oslo","unit":"celsius"}`) || fragments < 2 || acc.Choices[0].FinishReason != "tool_calls" {
			t.Errorf("streamed required: calls %+v in %d deltas, finish %q", calls, fragments, acc.Choices[0].FinishReason)
		}
	})

	t.Run("deprecated functions", func(t *testing.T) {
		body := object{"model": "tooler", "messages": []object{{"role": "user", "content": "What is the weather in Paris?"}},
			"functions": []object{{"name": "get_weather", "parameters": object{"type": "object", "properties": object{"city": object{"type": "string"}}}}}}
		resp, raw := f.post(t, "/v1/chat/completions", body)
		var r struct {
			Choices []struct {
				Message struct {
					FunctionCall *struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function_call"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &r) != nil || len(r.Choices) != 1 {
			t.Fatalf("status %d: %s", resp.StatusCode, raw)
		}
		fc := r.Choices[0].Message.FunctionCall
		if fc == nil || fc.Name != "get_weather" || !jsonEqual(fc.Arguments, `{"city":"Paris","unit":"celsius"}`) || r.Choices[0].FinishReason != "function_call" {
			t.Errorf("answer %s: want a function_call", raw)
		}

		// Streamed: delta.function_call, the name first, then arguments.
		body["stream"] = true
		resp, raw = f.post(t, "/v1/chat/completions", body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream: status %d: %s", resp.StatusCode, raw)
		}
		var name, args, finish string
		deltas := 0
		for _, ev := range parseSSE(t, raw) {
			if ev.data == "[DONE]" {
				continue
			}
			var c struct {
				Choices []struct {
					Delta struct {
						ToolCalls    []any `json:"tool_calls"`
						FunctionCall *struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function_call"`
					} `json:"delta"`
					FinishReason *string `json:"finish_reason"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(ev.data), &c); err != nil {
				t.Fatalf("chunk %s: %v", ev.data, err)
			}
			for _, ch := range c.Choices {
				if len(ch.Delta.ToolCalls) > 0 {
					t.Errorf("tool_calls in a functions API stream: %s", ev.data)
				}
				if fc := ch.Delta.FunctionCall; fc != nil {
					if deltas > 0 && fc.Name != "" {
						t.Errorf("function_call delta %d names the function again: %s", deltas, ev.data)
					}
					deltas++
					name += fc.Name
					args += fc.Arguments
				}
				if ch.FinishReason != nil {
					finish = *ch.FinishReason
				}
			}
		}
		if name != "get_weather" || !jsonEqual(args, `{"city":"Paris","unit":"celsius"}`) || deltas < 2 || finish != "function_call" {
			t.Errorf("streamed function_call %q %q in %d deltas, finish %q", name, args, deltas, finish)
		}
	})

	t.Run("reasoning without tools, thinking on and off", func(t *testing.T) {
		r := f.unary(t, "/v1/chat/completions", object{"model": "thinker", "messages": []object{{"role": "user", "content": "The meaning of life?"}}})
		if r.text() != "The answer is 42." {
			t.Errorf("content %q", r.text())
		}
		resp, raw := f.post(t, "/v1/chat/completions", object{"model": "thinker", "chat_template_args": object{"enable_thinking": false},
			"messages": []object{{"role": "user", "content": "The meaning of life?"}}})
		if resp.StatusCode != http.StatusOK || strings.Contains(string(raw), "reasoning_content") || !strings.Contains(string(raw), "Deep thought takes a while.") {
			t.Errorf("thinking off: %d %s, want everything as content", resp.StatusCode, raw)
		}
	})

	t.Run("the Responses API: reasoning, text and a function call", func(t *testing.T) {
		params := map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}, "unit": map[string]any{"type": "string"}}, "required": []string{"city"}}
		r, err := f.sdk.Responses.New(t.Context(), responses.ResponseNewParams{
			Model: "thinker",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("What is the weather in Paris?")},
			Tools: []responses.ToolUnionParam{responses.ToolParamOfFunction("get_weather", params, false)},
		})
		if err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, item := range r.Output {
			kinds = append(kinds, item.Type)
			switch item.Type {
			case "reasoning":
				if len(item.Content) == 0 || item.Content[0].Text != "The user wants the weather; I will call the tool." {
					t.Errorf("reasoning item %+v", item)
				}
			case "message":
				if len(item.Content) == 0 || strings.TrimSpace(item.Content[0].Text) != "Let me check." {
					t.Errorf("message item %+v", item)
				}
			case "function_call":
				if item.Name != "get_weather" || item.CallID == "" || !jsonEqual(item.Arguments.OfString, `{"city":"Paris","unit":"celsius"}`) {
					t.Errorf("function_call item %+v", item)
				}
			}
		}
		if strings.Join(kinds, ",") != "reasoning,message,function_call" || r.Status != responses.ResponseStatusCompleted {
			t.Errorf("output items %v, status %q; want reasoning, message, function_call, completed", kinds, r.Status)
		}
	})

	t.Run("the Responses API streamed: a function call read by the SDK", func(t *testing.T) {
		params := map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}, "unit": map[string]any{"type": "string"}}, "required": []string{"city"}}
		stream := f.sdk.Responses.NewStreaming(t.Context(), responses.ResponseNewParams{
			Model: "thinker",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("What is the weather in Paris?")},
			Tools: []responses.ToolUnionParam{responses.ToolParamOfFunction("get_weather", params, false)},
		})
		defer stream.Close()
		var (
			added, done string // the function_call item's name when added, its arguments when done
			argDeltas   int
			args        strings.Builder
			final       *responses.Response
			n           int
		)
		for stream.Next() {
			ev := stream.Current()
			if int(ev.SequenceNumber) != n {
				t.Errorf("event %d (%s): sequence_number %d", n, ev.Type, ev.SequenceNumber)
			}
			n++
			switch ev.Type {
			case "response.output_item.added":
				if it := ev.AsResponseOutputItemAdded().Item; it.Type == "function_call" {
					added = it.Name
				}
			case "response.function_call_arguments.delta":
				argDeltas++
				args.WriteString(ev.AsResponseFunctionCallArgumentsDelta().Delta)
			case "response.function_call_arguments.done":
				done = ev.AsResponseFunctionCallArgumentsDone().Arguments
			case "response.completed":
				r := ev.Response
				final = &r
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if added != "get_weather" || argDeltas < 2 || args.String() != done || !jsonEqual(done, `{"city":"Paris","unit":"celsius"}`) {
			t.Errorf("function_call item %q, %d argument deltas adding up to %q, done %q", added, argDeltas, args.String(), done)
		}
		if final == nil || final.Status != responses.ResponseStatusCompleted {
			t.Fatalf("final response %+v: want response.completed", final)
		}
		var call *responses.ResponseOutputItemUnion
		for i := range final.Output {
			if final.Output[i].Type == "function_call" {
				call = &final.Output[i]
			}
		}
		if call == nil || call.Name != "get_weather" || call.CallID == "" || call.Arguments.OfString != done {
			t.Errorf("completed response's function_call %+v", call)
		}
	})

	t.Run("n = 3 with logprobs, streamed", func(t *testing.T) {
		const maxTokens, top = 5, 2
		stream := f.sdk.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{
			Model:         "tooler",
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Three answers, please.")},
			N:             openai.Int(3),
			MaxTokens:     openai.Int(maxTokens),
			Temperature:   openai.Float(1),
			Seed:          openai.Int(11),
			Logprobs:      openai.Bool(true),
			TopLogprobs:   openai.Int(top),
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		})
		defer stream.Close()
		type view struct {
			text    string
			entries int
			finish  string
		}
		views := map[int64]*view{}
		var completion int64
		for stream.Next() {
			chunk := stream.Current()
			if chunk.Usage.CompletionTokens > 0 {
				completion = chunk.Usage.CompletionTokens
			}
			for _, ch := range chunk.Choices {
				v := views[ch.Index]
				if v == nil {
					v = &view{}
					views[ch.Index] = v
				}
				v.text += ch.Delta.Content
				for _, e := range ch.Logprobs.Content {
					v.entries++
					if len(e.TopLogprobs) != top {
						t.Errorf("choice %d token %q: %d top_logprobs, want %d", ch.Index, e.Token, len(e.TopLogprobs), top)
					}
				}
				if ch.FinishReason != "" {
					v.finish = ch.FinishReason
				}
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		texts := map[string]bool{}
		for i := range int64(3) {
			v := views[i]
			if v == nil {
				t.Fatalf("no chunk of choice %d (choices %v)", i, views)
			}
			if v.entries != maxTokens || v.finish != "length" {
				t.Errorf("choice %d: %d logprobs entries, finish %q; want %d, length", i, v.entries, v.finish, maxTokens)
			}
			texts[v.text] = true
		}
		if len(views) != 3 || len(texts) != 3 || completion != 3*maxTokens {
			t.Errorf("%d choices, %d distinct texts, %d completion tokens; want 3, 3, %d", len(views), len(texts), completion, 3*maxTokens)
		}
	})

	t.Run("n = 3 with logprobs", func(t *testing.T) {
		c, err := f.sdk.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
			Model:       "tooler",
			Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Three answers, please.")},
			N:           openai.Int(3),
			MaxTokens:   openai.Int(6),
			Temperature: openai.Float(1),
			Seed:        openai.Int(11),
			Logprobs:    openai.Bool(true),
			TopLogprobs: openai.Int(2),
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Choices) != 3 {
			t.Fatalf("%d choices, want 3", len(c.Choices))
		}
		texts := map[string]bool{}
		for i, ch := range c.Choices {
			if ch.Index != int64(i) || ch.FinishReason != "length" || len(ch.Logprobs.Content) != 6 {
				t.Errorf("choice %d: index %d, finish %q, %d logprobs", i, ch.Index, ch.FinishReason, len(ch.Logprobs.Content))
			}
			texts[ch.Message.Content] = true
		}
		if len(texts) != 3 {
			t.Errorf("the three choices are not distinct: %v", texts)
		}
		if c.Usage.CompletionTokens != 18 {
			t.Errorf("usage %+v, want 18 completion tokens (3 × 6)", c.Usage)
		}
	})
}

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}
