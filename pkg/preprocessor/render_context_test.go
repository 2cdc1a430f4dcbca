package preprocessor

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/openai"
)

// templatedModel is the demo tokenizer with chat_template set to tmpl (a
// string, or a list of named templates), written as a model directory.
func templatedModel(t *testing.T, tmpl any) *Model {
	t.Helper()
	dir := t.TempDir()
	tokB, err := os.ReadFile("../../models/demo/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{
		"bos_token": "<|begin_of_text|>", "eos_token": map[string]any{"content": "<|im_end|>"},
		"pad_token": "<|endoftext|>", "add_bos_token": false, "chat_template": tmpl,
	}
	cfgB, _ := json.Marshal(cfg)
	for name, b := range map[string][]byte{"tokenizer.json": tokB, "tokenizer_config.json": cfgB} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return loadModel(t, dir, modelcard.Options{Name: "t", ContextLength: 64})
}

func decodeChat(t *testing.T, body string) *openai.ChatCompletionRequest {
	t.Helper()
	var r openai.ChatCompletionRequest
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("request %s: %v", body, err)
	}
	return &r
}

func TestRenderChatContext(t *testing.T) {
	m := demoModel(t)
	cases := []struct {
		name, body, want string
	}{
		{"generation prompt by default",
			`{"messages":[{"role":"user","content":"hi"}]}`,
			"<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"},
		{"explicit add_generation_prompt false",
			`{"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":false}`,
			"<|im_start|>user\nhi<|im_end|>\n"},
		{"text parts joined with a newline",
			`{"messages":[{"role":"user","content":[{"type":"text","text":"one"},{"type":"text","text":"two"}]}],"add_generation_prompt":false}`,
			"<|im_start|>user\none\ntwo<|im_end|>\n"},
		{"continue_final_message cuts after the final text",
			`{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"The answer is"}],"continue_final_message":true}`,
			"<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nThe answer is"},
		{"kwargs are merged last and override",
			`{"messages":[{"role":"user","content":"hi"}],"chat_template_kwargs":{"add_generation_prompt":false}}`,
			"<|im_start|>user\nhi<|im_end|>\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := m.RenderChat(decodeChat(t, c.body))
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestRenderChatRefusals(t *testing.T) {
	m := templatedModel(t, `{% if messages[0].role != 'user' %}{{ raise_exception('Conversation roles must start with user') }}{% endif %}ok`)
	cases := []struct{ name, body, want string }{
		{"raise_exception reaches the client",
			`{"messages":[{"role":"system","content":"s"}]}`, "Conversation roles must start with user"},
		{"continue and generation prompt together",
			`{"messages":[{"role":"user","content":"x"}],"continue_final_message":true,"add_generation_prompt":true}`, "cannot both be true"},
		{"continue with text the template dropped",
			`{"messages":[{"role":"user","content":"not rendered"}],"continue_final_message":true}`, "does not appear"},
		{"kwargs that are not an object",
			`{"messages":[{"role":"user","content":"x"}],"chat_template_kwargs":[1]}`, "must be a JSON object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := m.RenderChat(decodeChat(t, c.body))
			var ve *openai.ValidationError
			if !errors.As(err, &ve) || !strings.Contains(ve.Message, c.want) {
				t.Fatalf("got %v, want a validation error containing %q", err, c.want)
			}
		})
	}
}

func TestRenderChatTemplateVariables(t *testing.T) {
	m := templatedModel(t, []map[string]string{
		{"name": "default", "template": "D{{ bos_token }}|{{ eos_token }}|{{ pad_token }}|{{ add_bos_token is defined }}|{{ messages|length }}"},
		{"name": "tool_use", "template": "T{% for t in tools %}{{ t.function.name }}={{ t.function.parameters|tojson }};{% endfor %}" +
			"{% for k, v in messages[0].tool_calls[0].function.arguments|items %}{{ k }}:{{ v }},{% endfor %}" +
			"{{ documents[0].title if documents is defined }}{{ enable_thinking }}"},
	})
	t.Run("special tokens as strings, flags left out, default template", func(t *testing.T) {
		got, err := m.RenderChat(decodeChat(t, `{"messages":[{"role":"user","content":"x"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		if want := "D<|begin_of_text|>|<|im_end|>|<|endoftext|>|False|1"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
	withTools := `{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"b\": 1, \"a\": \"x\"}"}}]}],
		"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"g","parameters":{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"}}}}}],
		"documents":[{"title":"Doc"}],"chat_template_kwargs":{"enable_thinking":false}%s}`
	t.Run("tool_use template, schema order kept, string arguments parsed", func(t *testing.T) {
		got, err := m.RenderChat(decodeChat(t, strings.Replace(withTools, "%s", "", 1)))
		if err != nil {
			t.Fatal(err)
		}
		want := `Tf={"type": "object", "properties": {}};g={"type": "object", "properties": {"z": {"type": "string"}, "a": {"type": "integer"}}};b:1,a:x,DocFalse`
		if got != want {
			t.Errorf("got  %q\nwant %q", got, want)
		}
	})
	t.Run("tool_choice none hides the tools", func(t *testing.T) {
		got, err := m.RenderChat(decodeChat(t, strings.Replace(withTools, "%s", `,"tool_choice":"none"`, 1)))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(got, "D") {
			t.Errorf("got %q, want the default template", got)
		}
	})
}
