package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// decodeResponses decodes body and fails the test on an error.
func decodeResponses(t *testing.T, body string) (*ResponsesRequest, *ChatCompletionRequest) {
	t.Helper()
	req, chat, err := DecodeResponses([]byte(body), DecodeOptions{})
	if err != nil {
		t.Fatalf("DecodeResponses(%s): %v", body, err)
	}
	return req, chat
}

// plainMessage is what a chat template sees of a message.
type plainMessage struct {
	Role       string
	Content    string // "<null>" for null content
	ToolCallID string
	Calls      []string // "id name args"
}

func plainMessages(msgs []Message) []plainMessage {
	var out []plainMessage
	for _, m := range msgs {
		p := plainMessage{Role: m.Role, Content: "<null>", ToolCallID: m.ToolCallID}
		if m.Content.Text != nil {
			p.Content = *m.Content.Text
		}
		for _, c := range m.ToolCalls {
			var args string
			if err := json.Unmarshal(c.Function.Arguments, &args); err != nil {
				args = "not a JSON string: " + string(c.Function.Arguments)
			}
			p.Calls = append(p.Calls, c.ID+" "+c.Function.Name+" "+args)
		}
		out = append(out, p)
	}
	return out
}

func TestDecodeResponsesStringInput(t *testing.T) {
	_, chat := decodeResponses(t, `{"model":"m","input":"Hello","instructions":"Be brief.","max_output_tokens":16,"temperature":0.5,"top_p":0.9}`)
	want := []plainMessage{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hello"}}
	if diff := cmp.Diff(want, plainMessages(chat.Messages)); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	if chat.Model != "m" || *chat.MaxTokens != 16 || *chat.Temperature != 0.5 || *chat.TopP != 0.9 || chat.Stream {
		t.Errorf("chat request %+v: want model m, max_tokens 16, temperature 0.5, top_p 0.9, unary", chat)
	}
}

func TestDecodeResponsesItems(t *testing.T) {
	body := `{"model":"m","stream":true,"input":[
		{"role":"developer","content":"Use tools."},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"Weather in "},{"type":"input_text","text":"Paris and Rome?"}]},
		{"type":"reasoning","id":"rs_1","summary":[]},
		{"type":"message","role":"assistant","id":"msg_1","status":"completed","content":[{"type":"output_text","text":"Checking.","annotations":[]}]},
		{"type":"function_call","call_id":"call_a","name":"weather","arguments":"{\"city\":\"Paris\"}","id":"fc_1","status":"completed"},
		{"type":"function_call","call_id":"call_b","name":"weather","arguments":"{\"city\":\"Rome\"}"},
		{"type":"function_call_output","call_id":"call_a","output":"sunny"},
		{"type":"function_call_output","call_id":"call_b","output":[{"type":"input_text","text":"rain"}]}
	],
	"tools":[{"type":"function","name":"weather","description":"Weather of a city","parameters":{"type":"object","properties":{"city":{"type":"string"}}},"strict":true}],
	"tool_choice":{"type":"function","name":"weather"},
	"parallel_tool_calls":false,
	"metadata":{"k":"v"},"store":true,"user":"u1","truncation":"disabled","reasoning":{"effort":"low"}}`
	_, chat := decodeResponses(t, body)
	want := []plainMessage{
		{Role: "developer", Content: "Use tools."},
		{Role: "user", Content: "Weather in Paris and Rome?"},
		{Role: "assistant", Content: "Checking.", Calls: []string{`call_a weather {"city":"Paris"}`, `call_b weather {"city":"Rome"}`}},
		{Role: "tool", Content: "sunny", ToolCallID: "call_a"},
		{Role: "tool", Content: "rain", ToolCallID: "call_b"},
	}
	if diff := cmp.Diff(want, plainMessages(chat.Messages)); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	if len(chat.Tools) != 1 {
		t.Fatalf("tools %+v, want one", chat.Tools)
	}
	fn := chat.Tools[0].Function
	if chat.Tools[0].Type != "function" || fn.Name != "weather" || fn.Description != "Weather of a city" || !strings.Contains(string(fn.Parameters), `"city"`) || fn.Strict == nil || !*fn.Strict {
		t.Errorf("tool %+v: want the function with its schema, description and strict", chat.Tools[0])
	}
	// The chat request as the template and the engine get it.
	b, err := json.Marshal(chat)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`"tool_choice":{"type":"function","function":{"name":"weather"}}`,
		`"parallel_tool_calls":false`,
		`"stream":true`, `"user":"u1"`,
		`"tools":[{"type":"function","function":{"name":"weather"`,
	} {
		if !strings.Contains(string(b), s) {
			t.Errorf("chat request %s\nlacks %s", b, s)
		}
	}
}

// A function call with no assistant message before it gets one with empty
// (not null) content, which chat templates can concatenate.
func TestDecodeResponsesLoneFunctionCall(t *testing.T) {
	_, chat := decodeResponses(t, `{"model":"m","input":[{"role":"user","content":"Weather?"},
		{"type":"function_call","call_id":"c1","name":"weather","arguments":"{}"},
		{"type":"function_call_output","call_id":"c1","output":"sunny"}]}`)
	want := []plainMessage{
		{Role: "user", Content: "Weather?"},
		{Role: "assistant", Content: "", Calls: []string{"c1 weather {}"}},
		{Role: "tool", Content: "sunny", ToolCallID: "c1"},
	}
	if diff := cmp.Diff(want, plainMessages(chat.Messages)); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

// text.format becomes the chat request's response_format (a named tool
// choice, which constrains the output too, cannot go with it).
func TestDecodeResponsesTextFormat(t *testing.T) {
	_, chat := decodeResponses(t, `{"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"answer","schema":{"type":"object"}}}}`)
	b, err := json.Marshal(chat)
	if err != nil {
		t.Fatal(err)
	}
	if want := `"response_format":{"type":"json_schema","json_schema":{"name":"answer","schema":{"type":"object"}}}`; !strings.Contains(string(b), want) {
		t.Errorf("chat request %s\nlacks %s", b, want)
	}
}

func TestDecodeResponsesToolChoiceModes(t *testing.T) {
	for _, mode := range []string{"none", "auto", "required"} {
		_, chat := decodeResponses(t, `{"model":"m","input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":"`+mode+`"}`)
		if string(chat.ToolChoiceRaw) != `"`+mode+`"` {
			t.Errorf("tool_choice %s became %s", mode, chat.ToolChoiceRaw)
		}
	}
}

func TestDecodeResponsesErrors(t *testing.T) {
	for _, tc := range []struct {
		name, body, param, contains string
	}{
		{"empty previous_response_id", `{"model":"m","input":"x","previous_response_id":""}`, "previous_response_id", "must not be empty"},
		{"conversation", `{"model":"m","input":"x","conversation":"conv_1"}`, "conversation", "does not store"},
		{"background without store", `{"model":"m","input":"x","background":true,"store":false}`, "background", "need store"},
		{"unknown field", `{"model":"m","input":"x","frobnicate":1}`, "frobnicate", "Unsupported parameter(s): `frobnicate`"},
		{"no model", `{"input":"x"}`, "model", "model must not be empty"},
		{"no input", `{"model":"m"}`, "input", "input is required"},
		{"empty list", `{"model":"m","input":[]}`, "input", "must not be an empty list"},
		{"number input", `{"model":"m","input":3}`, "input", "a string or a list"},
		{"temperature", `{"model":"m","input":"x","temperature":3}`, "temperature", "between 0 and 2"},
		{"top_p", `{"model":"m","input":"x","top_p":1.5}`, "top_p", "between 0 and 1"},
		{"max_output_tokens", `{"model":"m","input":"x","max_output_tokens":0}`, "max_output_tokens", "at least 1"},
		{"hosted tool call item", `{"model":"m","input":[{"type":"web_search_call","id":"ws_1"}]}`, "input[0].type", "`web_search_call` is not supported"},
		{"item_reference", `{"model":"m","input":[{"type":"item_reference","id":"msg_1"}]}`, "input[0].type", "does not store items"},
		{"no type nor role", `{"model":"m","input":[{"content":"x"}]}`, "input[0].type", "type (or role) is required"},
		{"tool role", `{"model":"m","input":[{"role":"tool","content":"x"}]}`, "input[0].role", "unknown role `tool`"},
		{"image part", `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"what is this?"},{"type":"input_image","image_url":"http://x"}]}]}`, "input[0].content[1].type", "`input_image` is not supported"},
		{"no content", `{"model":"m","input":[{"role":"user"}]}`, "input[0].content", "is required"},
		{"call without id", `{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, "input[0]", "needs call_id, name and arguments"},
		{"output without call id", `{"model":"m","input":[{"type":"function_call_output","output":"x"}]}`, "input[0].call_id", "needs call_id"},
		{"web_search tool", `{"model":"m","input":"x","tools":[{"type":"web_search"}]}`, "tools[0].type", "`web_search` is not supported"},
		{"nameless function", `{"model":"m","input":"x","tools":[{"type":"function","parameters":{}}]}`, "tools[0].name", "needs a name"},
		{"hosted tool_choice", `{"model":"m","input":"x","tool_choice":{"type":"file_search"}}`, "tool_choice", "`file_search` is not supported"},
		{"unknown tool_choice mode", `{"model":"m","input":"x","tool_choice":"sometimes"}`, "tool_choice", "`sometimes` is not supported"},
		{"text format", `{"model":"m","input":"x","text":{"format":{"type":"grammar"}}}`, "text.format.type", "`grammar` is not supported"},
		{"schema without name", `{"model":"m","input":"x","text":{"format":{"type":"json_schema","schema":{}}}}`, "text.format.name", "needs a name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := DecodeResponses([]byte(tc.body), DecodeOptions{})
			checkValidation(t, err, "", tc.contains)
			if ve := err.(*ValidationError); ve.Param != tc.param {
				t.Errorf("param = %q, want %q (message %q)", ve.Param, tc.param, ve.Message)
			}
		})
	}
}

func TestDecodeResponsesAllowUnknownFields(t *testing.T) {
	_, _, err := DecodeResponses([]byte(`{"model":"m","input":"x","frobnicate":1}`), DecodeOptions{AllowUnknownFields: true})
	if err != nil {
		t.Errorf("with AllowUnknownFields: %v", err)
	}
}

func TestResponsesInputItems(t *testing.T) {
	for _, tc := range []struct {
		name, input string
		want        []string
	}{
		{"string", `"hi"`, []string{`{"content":[{"type":"input_text","text":"hi"}],"id":"in_0","role":"user","status":"completed","type":"message"}`}},
		{"items", `[{"role":"user","content":"q"},{"type":"message","role":"assistant","content":"a","id":"msg_x"},{"type":"function_call_output","call_id":"c","output":"o"}]`, []string{
			`{"content":[{"type":"input_text","text":"q"}],"id":"in_0","role":"user","status":"completed","type":"message"}`,
			`{"content":[{"type":"output_text","text":"a","annotations":[],"logprobs":[]}],"id":"msg_x","role":"assistant","status":"completed","type":"message"}`,
			`{"call_id":"c","id":"in_2","output":"o","type":"function_call_output"}`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &ResponsesRequest{Model: "m", Input: json.RawMessage(tc.input)}
			items, err := r.InputItems("in_")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range items {
				got = append(got, string(it))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
			// The items translate as the input did.
			want, err := r.ToChat()
			if err != nil {
				t.Fatal(err)
			}
			if err := r.SetInput(items); err != nil {
				t.Fatal(err)
			}
			r2, err := r.ToChat()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.Messages, r2.Messages); diff != "" {
				t.Errorf("messages from the items (-input +items):\n%s", diff)
			}
		})
	}
}
