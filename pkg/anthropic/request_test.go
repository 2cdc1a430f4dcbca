package anthropic

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamo-go/dynamo/pkg/openai"
)

// body is a Messages request of the demo model with max_tokens 16 and
// the fields of extra (JSON members, without braces).
func body(extra string) string {
	b := `{"model":"demo","max_tokens":16`
	if !strings.Contains(extra, `"messages"`) {
		b += `,"messages":[{"role":"user","content":"Hi"}]`
	}
	if extra != "" {
		b += "," + extra
	}
	return b + "}"
}

// msg is a chat message as the translation writes it, for comparison.
type msg struct {
	Role, Content, ToolCallID string
	Calls                     []call
}

type call struct{ ID, Name, Args string }

func messagesOf(t *testing.T, chat *openai.ChatCompletionRequest) []msg {
	t.Helper()
	var out []msg
	for _, m := range chat.Messages {
		got := msg{Role: m.Role, ToolCallID: m.ToolCallID}
		if m.Content.Text != nil {
			got.Content = *m.Content.Text
		}
		for _, tc := range m.ToolCalls {
			var args string
			if err := json.Unmarshal(tc.Function.Arguments, &args); err != nil {
				t.Fatalf("tool call arguments %s: not a JSON string", tc.Function.Arguments)
			}
			got.Calls = append(got.Calls, call{tc.ID, tc.Function.Name, args})
		}
		out = append(out, got)
	}
	return out
}

func TestDecodeMessages(t *testing.T) {
	for _, tc := range []struct {
		name, extra string
		want        []msg
	}{
		{"string content", ``, []msg{{Role: "user", Content: "Hi"}}},
		{"system string", `"system":"Be brief."`, []msg{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}}},
		{"system blocks", `"system":[{"type":"text","text":"Be brief."},{"type":"text","text":"Be kind.","cache_control":{"type":"ephemeral"}}]`,
			[]msg{{Role: "system", Content: "Be brief.\nBe kind."}, {Role: "user", Content: "Hi"}}},
		{"text blocks", `"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]`,
			[]msg{{Role: "user", Content: "a\nb"}}},
		{"tool round trip", `"messages":[
			{"role":"user","content":"Weather in Paris?"},
			{"role":"assistant","content":[{"type":"thinking","thinking":"call it","signature":"s"},{"type":"text","text":"Checking."},
				{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}},
				{"type":"tool_use","id":"toolu_2","name":"get_time","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"sunny"},
				{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"noon"}],"is_error":true},
				{"type":"text","text":"And tomorrow?"}]}]`,
			[]msg{
				{Role: "user", Content: "Weather in Paris?"},
				{Role: "assistant", Content: "Checking.", Calls: []call{{"toolu_1", "get_weather", `{"city":"Paris"}`}, {"toolu_2", "get_time", `{}`}}},
				{Role: "tool", Content: "sunny", ToolCallID: "toolu_1"},
				{Role: "tool", Content: "Error: noon", ToolCallID: "toolu_2"},
				{Role: "user", Content: "And tomorrow?"},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, chat, err := Decode([]byte(body(tc.extra)), DecodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, messagesOf(t, chat)); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeFields(t *testing.T) {
	tools := `"tools":[{"name":"get_weather","description":"Weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]`
	for _, tc := range []struct {
		name, extra string
		check       func(t *testing.T, c *openai.ChatCompletionRequest)
	}{
		{"scalars", `"temperature":0.5,"top_p":0.9,"top_k":40,"stop_sequences":["END","##"],"metadata":{"user_id":"u1"},"stream":true`, func(t *testing.T, c *openai.ChatCompletionRequest) {
			if *c.MaxTokens != 16 || *c.Temperature != 0.5 || *c.TopP != 0.9 || *c.TopK != 40 || c.User != "u1" || !c.Stream {
				t.Errorf("max_tokens %d, temperature %v, top_p %v, top_k %v, user %q, stream %v", *c.MaxTokens, *c.Temperature, *c.TopP, *c.TopK, c.User, c.Stream)
			}
			if c.Stop == nil || !cmp.Equal(c.Stop.Strings, []string{"END", "##"}) {
				t.Errorf("stop %+v", c.Stop)
			}
		}},
		{"tools", tools, func(t *testing.T, c *openai.ChatCompletionRequest) {
			if len(c.Tools) != 1 || c.Tools[0].Type != "function" || c.Tools[0].Function.Name != "get_weather" || c.Tools[0].Function.Description != "Weather" ||
				!strings.Contains(string(c.Tools[0].Function.Parameters), `"city"`) {
				t.Errorf("tools %+v", c.Tools)
			}
		}},
		{"tool_choice auto, no parallel calls", tools + `,"tool_choice":{"type":"auto","disable_parallel_tool_use":true}`, func(t *testing.T, c *openai.ChatCompletionRequest) {
			if tc, _ := c.ToolChoice(); tc.Mode != openai.ToolChoiceAuto || c.ParallelToolCalls == nil || *c.ParallelToolCalls {
				t.Errorf("tool choice %+v, parallel_tool_calls %v", tc, c.ParallelToolCalls)
			}
		}},
		{"tool_choice any", tools + `,"tool_choice":{"type":"any"}`, func(t *testing.T, c *openai.ChatCompletionRequest) {
			if tc, _ := c.ToolChoice(); tc.Mode != openai.ToolChoiceRequired || c.ParallelToolCalls != nil {
				t.Errorf("tool choice %+v", tc)
			}
		}},
		{"tool_choice tool", tools + `,"tool_choice":{"type":"tool","name":"get_weather"}`, func(t *testing.T, c *openai.ChatCompletionRequest) {
			if tc, _ := c.ToolChoice(); tc.Mode != openai.ToolChoiceFunction || tc.Name != "get_weather" {
				t.Errorf("tool choice %+v", tc)
			}
		}},
		{"tool_choice none", tools + `,"tool_choice":{"type":"none"}`, func(t *testing.T, c *openai.ChatCompletionRequest) {
			if !c.ToolChoiceNone() {
				t.Errorf("tool choice %s, want none", c.ToolChoiceRaw)
			}
		}},
		{"thinking enabled", `"thinking":{"type":"enabled","budget_tokens":8}`, func(t *testing.T, c *openai.ChatCompletionRequest) {
			if c.NvExt == nil || c.NvExt.MaxThinkingTokens == nil || *c.NvExt.MaxThinkingTokens != 8 || string(c.ChatTemplateArgs) != `{"enable_thinking":true}` {
				t.Errorf("nvext %+v, chat_template_args %s", c.NvExt, c.ChatTemplateArgs)
			}
		}},
		{"thinking disabled", `"thinking":{"type":"disabled"}`, func(t *testing.T, c *openai.ChatCompletionRequest) {
			if c.NvExt != nil || string(c.ChatTemplateArgs) != `{"enable_thinking":false}` || !strings.Contains(string(c.Thinking), "disabled") {
				t.Errorf("nvext %+v, chat_template_args %s, thinking %s", c.NvExt, c.ChatTemplateArgs, c.Thinking)
			}
		}},
		{"no thinking leaves the model's default", ``, func(t *testing.T, c *openai.ChatCompletionRequest) {
			if c.NvExt != nil || c.ChatTemplateArgs != nil || c.Thinking != nil {
				t.Errorf("nvext %+v, chat_template_args %s, thinking %s", c.NvExt, c.ChatTemplateArgs, c.Thinking)
			}
		}},
		{"prefilled answer is continued", `"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello, I am"}]`, func(t *testing.T, c *openai.ChatCompletionRequest) {
			if c.ContinueFinalMessage == nil || !*c.ContinueFinalMessage || c.AddGenerationPrompt == nil || *c.AddGenerationPrompt {
				t.Errorf("continue_final_message %v, add_generation_prompt %v", c.ContinueFinalMessage, c.AddGenerationPrompt)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, chat, err := Decode([]byte(body(tc.extra)), DecodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, chat)
		})
	}
}

// decodeErrorTests are bodies Decode refuses, with the param and a part
// of the message.
var decodeErrorTests = []struct {
	name, body, param, msg string
}{
	{"not an object", `[1]`, "", "JSON object"},
	{"not JSON", `{"model":`, "", "JSON object"},
	{"missing max_tokens", `{"model":"demo","messages":[{"role":"user","content":"Hi"}]}`, "max_tokens", "max_tokens: field required"},
	{"zero max_tokens", `{"model":"demo","max_tokens":0,"messages":[{"role":"user","content":"Hi"}]}`, "max_tokens", "at least 1"},
	{"missing model", `{"max_tokens":5,"messages":[{"role":"user","content":"Hi"}]}`, "model", "model: field required"},
	{"no messages", `{"model":"demo","max_tokens":5,"messages":[]}`, "messages", "at least one message"},
	{"wrong type", body(`"temperature":"hot"`), "temperature", "expected a number"},
	{"temperature range", body(`"temperature":1.5`), "temperature", "between 0 and 1"},
	{"unknown field", body(`"frobnicate":1`), "frobnicate", "Unsupported parameter(s): `frobnicate`"},
	{"system role", body(`"messages":[{"role":"system","content":"x"}]`), "messages[0].role", "`system` is not one of"},
	{"image block", body(`"messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}]}]`),
		"messages[0].content[1].type", "`image` blocks are not supported"},
	{"document block", body(`"messages":[{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"x"}}]}]`),
		"messages[0].content[0].type", "`document` blocks are not supported"},
	{"unknown block", body(`"messages":[{"role":"user","content":[{"type":"hologram"}]}]`), "messages[0].content[0].type", "block type `hologram` is not supported"},
	{"image in a tool result", body(`"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{}}]}]}]`),
		"messages[0].content[0].content[0].type", "`image` blocks are not supported"},
	{"tool_use from the user", body(`"messages":[{"role":"user","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]}]`), "messages[0].content[0].type", "tool_use"},
	{"tool_result without id", body(`"messages":[{"role":"user","content":[{"type":"tool_result","content":"x"}]}]`), "messages[0].content[0].tool_use_id", "field required"},
	{"text block without text", body(`"messages":[{"role":"user","content":[{"type":"text"}]}]`), "messages[0].content[0].text", "field required"},
	{"server tool", body(`"tools":[{"type":"web_search_20250305","name":"web_search"}]`), "tools[0].type", "no server tools"},
	{"tool without schema", body(`"tools":[{"name":"f"}]`), "tools[0].input_schema", "field required"},
	{"tool_choice unknown tool", body(`"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"g"}`), "tool_choice.name", "`g` is not in `tools`"},
	{"tool_choice any without tools", body(`"tool_choice":{"type":"any"}`), "tool_choice", "at least one tool"},
	{"tool_choice string", body(`"tool_choice":"auto"`), "tool_choice", "expected an object"},
	{"thinking budget over max_tokens", body(`"thinking":{"type":"enabled","budget_tokens":16}`), "thinking.budget_tokens", "less than max_tokens"},
	{"thinking without budget", body(`"thinking":{"type":"enabled"}`), "thinking.budget_tokens", "field required"},
	{"empty stop sequence", body(`"stop_sequences":[""]`), "stop_sequences[0]", "must not be empty"},
	{"metadata not an object", body(`"metadata":"x"`), "metadata", "expected an object"},
	{"tool_use left unanswered at the end", body(`"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]}]`),
		"messages[1]", "tool_result"},
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range decodeErrorTests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Decode([]byte(tc.body), DecodeOptions{})
			var ve *openai.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %v (%T), want a *openai.ValidationError", err, err)
			}
			if ve.Param != tc.param || !strings.Contains(ve.Message, tc.msg) {
				t.Errorf("param %q, message %q; want param %q, a message with %q", ve.Param, ve.Message, tc.param, tc.msg)
			}
		})
	}
}

func TestDecodeOptionsAndCountTokens(t *testing.T) {
	if _, _, err := Decode([]byte(body(`"service_tier":"auto","inference_geo":"us","cache_control":{"type":"ephemeral"}`)), DecodeOptions{}); err != nil {
		t.Errorf("fields accepted and ignored: %v", err)
	}
	if _, _, err := Decode([]byte(body(`"frobnicate":1`)), DecodeOptions{AllowUnknownFields: true}); err != nil {
		t.Errorf("unknown field with AllowUnknownFields: %v", err)
	}
	// A key that differs from a known one in case only is unknown, not
	// the known field.
	if _, chat, err := Decode([]byte(body(`"Temperature":5`)), DecodeOptions{AllowUnknownFields: true}); err != nil || chat.Temperature != nil {
		t.Errorf("\"Temperature\" with AllowUnknownFields: %v, temperature %v", err, chat.Temperature)
	}
	_, chat, err := DecodeCountTokens([]byte(`{"model":"demo","system":"s","messages":[{"role":"user","content":"Hi"}]}`), DecodeOptions{})
	if err != nil || chat.MaxTokens != nil || len(chat.Messages) != 2 {
		t.Errorf("count_tokens without max_tokens: %v, %+v", err, chat)
	}
}

func FuzzDecode(f *testing.F) {
	for _, tc := range decodeErrorTests {
		f.Add([]byte(tc.body))
	}
	f.Add([]byte(body(`"system":[{"type":"text","text":"s"}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"f"},"thinking":{"type":"enabled","budget_tokens":4},"stop_sequences":["x"],"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{"a":1}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r"}]}]`)))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, opts := range []DecodeOptions{{}, {AllowUnknownFields: true}} {
			req, chat, err := Decode(b, opts)
			if err != nil {
				var ve *openai.ValidationError
				if !errors.As(err, &ve) || ve.Message == "" {
					t.Fatalf("error %v (%T): want a *openai.ValidationError with a message", err, err)
				}
				continue
			}
			if req == nil || chat == nil || len(chat.Messages) == 0 || chat.MaxTokens == nil {
				t.Fatalf("decoded %+v into %+v", req, chat)
			}
			// What the decoder accepts, the chat path accepts.
			if err := chat.Validate(); err != nil {
				t.Fatalf("translated request fails chat validation: %v", err)
			}
			if _, err := chat.ToolChoice(); err != nil {
				t.Fatalf("translated tool_choice: %v", err)
			}
		}
	})
}
