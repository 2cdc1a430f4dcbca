package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// The canned answers of TestMessages' mockers, keyed by a phrase of the
// prompt (the first entry that matches answers): a reasoning model with
// Hermes-style tool calls, as in TestToolsAndReasoning, and plain text.
var messagesCanned = []object{
	// The tool's result is in the prompt: the model answers with it.
	{"prompt_contains": "sunny, 24 C", "text": `</think>It is sunny and 24 C in Paris.`},
	{"prompt_contains": "weather in Paris", "text": `The user wants the weather; I will call the tool.</think>Let me check.<tool_call>
{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}
</tool_call>`},
	{"prompt_contains": "meaning of life", "text": `Deep thought takes a while.</think>The answer is 42.`},
	{"prompt_contains": "Count to five", "text": `One, two, three. STOP Four, five.`},
	{"prompt_contains": "Say hello", "text": `Hello! How can I help you today?`},
	// Long enough to hold the slow mocker's one slot for seconds.
	{"prompt_contains": "a long story", "text": strings.Repeat("Once upon a time there was a story. ", 150)},
}

// messagesClient is the official Anthropic SDK on f, sending key in
// x-api-key; it reads nothing from the environment and never retries.
func messagesClient(f *frontend, key string) anthropic.Client {
	return anthropic.NewClient(
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(f.url+"/"),
		option.WithHeader("x-api-key", key),
		option.WithHTTPClient(f.http),
		option.WithMaxRetries(0), // a retry would hide a failure
	)
}

var weatherToolParam = anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
	Name:        "get_weather",
	Description: anthropic.String("Current weather in a city"),
	InputSchema: anthropic.ToolInputSchemaParam{
		Properties: map[string]any{"city": map[string]any{"type": "string"}, "unit": map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}}},
		Required:   []string{"city"},
	},
}}

// TestMessages serves Anthropic's Messages API from a frontend and
// mockers that say canned answers, and reads it with the official
// Anthropic Go SDK: text unary and streamed, a tool call streamed as
// input_json_delta fragments and answered with a tool_result, thinking
// blocks from the reasoning parser, stop_sequences, count_tokens against
// the prompt's token count, and the errors the SDK surfaces (400, 401
// with a bad x-api-key, 404, 529 with Retry-After).
func TestMessages(t *testing.T) {
	c := newCluster(t, "file", "tcp")
	b, err := json.Marshal(messagesCanned)
	if err != nil {
		t.Fatal(err)
	}
	canned := filepath.Join(t.TempDir(), "canned.json")
	if err := os.WriteFile(canned, b, 0o644); err != nil {
		t.Fatal(err)
	}
	c.startMocker("thinker", []string{"--model-name", "thinker", "--speedup-ratio", "200", "--canned-responses", canned,
		"--dyn-tool-call-parser", "hermes", "--dyn-reasoning-parser", "deepseek_r1"})
	c.startMocker("plain", []string{"--model-name", "plain", "--speedup-ratio", "200", "--canned-responses", canned})
	c.startMocker("slow", []string{"--model-name", "slow", "--speedup-ratio", "1", "--max-num-seqs", "1", "--canned-responses", canned})
	f := c.startFrontend()
	f.waitModels(t, "thinker", "plain", "slow")
	sdk := messagesClient(f, "any")
	ctx := t.Context()
	hello := anthropic.MessageNewParams{
		Model:     "plain",
		MaxTokens: 64,
		System:    []anthropic.TextBlockParam{{Text: "You are friendly."}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Say hello"))},
	}

	t.Run("text", func(t *testing.T) {
		m, err := sdk.Messages.New(ctx, hello)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(m.ID, "msg_") || m.Role != "assistant" || m.Model != "plain" || len(m.Content) != 1 || m.Content[0].Type != "text" ||
			m.Content[0].Text != "Hello! How can I help you today?" || m.StopReason != anthropic.StopReasonEndTurn {
			t.Errorf("message %s", m.RawJSON())
		}
		if m.Usage.InputTokens+m.Usage.CacheReadInputTokens == 0 || m.Usage.OutputTokens == 0 {
			t.Errorf("usage %s", m.Usage.RawJSON())
		}

		stream := sdk.Messages.NewStreaming(ctx, hello)
		defer stream.Close()
		var acc anthropic.Message
		var types []string
		for stream.Next() {
			ev := stream.Current()
			if len(types) == 0 || types[len(types)-1] != ev.Type {
				types = append(types, ev.Type)
			}
			if err := acc.Accumulate(ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		want := "message_start content_block_start content_block_delta content_block_stop message_delta message_stop"
		if got := strings.Join(types, " "); got != want {
			t.Errorf("events %s, want %s (the SDK skips ping)", got, want)
		}
		if len(acc.Content) != 1 || acc.Content[0].Text != m.Content[0].Text || acc.StopReason != m.StopReason || acc.Usage.OutputTokens != m.Usage.OutputTokens {
			t.Errorf("streamed %s\nunary %s", acc.RawJSON(), m.RawJSON())
		}
	})

	t.Run("tool call streamed, then its result", func(t *testing.T) {
		params := anthropic.MessageNewParams{
			Model:     "thinker",
			MaxTokens: 200,
			Tools:     []anthropic.ToolUnionParam{weatherToolParam},
			Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What is the weather in Paris?"))},
		}
		stream := sdk.Messages.NewStreaming(ctx, params)
		defer stream.Close()
		var acc anthropic.Message
		fragments := 0
		for stream.Next() {
			ev := stream.Current()
			if ev.Type == "content_block_delta" && ev.Delta.Type == "input_json_delta" {
				fragments++
			}
			if err := acc.Accumulate(ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if fragments < 2 || acc.StopReason != anthropic.StopReasonToolUse || len(acc.Content) != 3 {
			t.Fatalf("%d input_json_delta fragments, stop_reason %q, message %s: want the input in fragments, tool_use, three blocks", fragments, acc.StopReason, acc.RawJSON())
		}
		thinking, text, use := acc.Content[0], acc.Content[1], acc.Content[2]
		if thinking.Type != "thinking" || thinking.Thinking != "The user wants the weather; I will call the tool." || text.Type != "text" || strings.TrimSpace(text.Text) != "Let me check." {
			t.Errorf("blocks before the call: %s", acc.RawJSON())
		}
		if use.Type != "tool_use" || use.Name != "get_weather" || use.ID == "" || !jsonEqual(string(use.Input), `{"city":"Paris","unit":"celsius"}`) {
			t.Errorf("tool_use block %s", use.RawJSON())
		}

		// The whole turn goes back with the tool's result.
		params.Messages = append(params.Messages, acc.ToParam(),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, "sunny, 24 C", false)))
		m, err := sdk.Messages.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Content) != 1 || m.Content[0].Text != "It is sunny and 24 C in Paris." || m.StopReason != anthropic.StopReasonEndTurn {
			t.Errorf("answer to the tool result: %s", m.RawJSON())
		}
	})

	t.Run("thinking", func(t *testing.T) {
		m, err := sdk.Messages.New(ctx, anthropic.MessageNewParams{
			Model:     "thinker",
			MaxTokens: 200,
			Thinking:  anthropic.ThinkingConfigParamOfEnabled(100),
			Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What is the meaning of life?"))},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Content) != 2 || m.Content[0].Type != "thinking" || m.Content[0].Thinking != "Deep thought takes a while." ||
			m.Content[1].Type != "text" || m.Content[1].Text != "The answer is 42." {
			t.Errorf("message %s: want a thinking block, then the text", m.RawJSON())
		}
	})

	t.Run("stop_sequences", func(t *testing.T) {
		m, err := sdk.Messages.New(ctx, anthropic.MessageNewParams{
			Model:         "plain",
			MaxTokens:     64,
			StopSequences: []string{"HALT", "STOP"},
			Messages:      []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Count to five"))},
		})
		if err != nil {
			t.Fatal(err)
		}
		if m.StopReason != anthropic.StopReasonStopSequence || m.StopSequence != "STOP" || len(m.Content) != 1 || strings.TrimSpace(m.Content[0].Text) != "One, two, three." {
			t.Errorf("message %s: want the text before STOP, stop_reason stop_sequence, stop_sequence STOP", m.RawJSON())
		}
	})

	t.Run("count_tokens", func(t *testing.T) {
		count, err := sdk.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{
			Model:    "plain",
			System:   anthropic.MessageCountTokensParamsSystemUnion{OfTextBlockArray: hello.System},
			Messages: hello.Messages,
		})
		if err != nil {
			t.Fatal(err)
		}
		m, err := sdk.Messages.New(ctx, hello)
		if err != nil {
			t.Fatal(err)
		}
		// The prompt the model saw: its uncached and cached tokens.
		if prompt := m.Usage.InputTokens + m.Usage.CacheReadInputTokens; count.InputTokens != prompt || prompt == 0 {
			t.Errorf("count_tokens %d, the answer's prompt %d tokens (%s)", count.InputTokens, prompt, m.Usage.RawJSON())
		}
		// The chat path counts the same prompt alike.
		resp, raw := f.post(t, "/v1/chat/completions", object{"model": "plain", "max_tokens": 1, "messages": []object{
			{"role": "system", "content": "You are friendly."}, {"role": "user", "content": "Say hello"}}})
		var chat struct {
			Usage struct {
				PromptTokens int64 `json:"prompt_tokens"`
			}
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &chat) != nil || chat.Usage.PromptTokens != count.InputTokens {
			t.Errorf("chat's prompt_tokens: %d %s; count_tokens %d", resp.StatusCode, raw, count.InputTokens)
		}
	})

	t.Run("errors", func(t *testing.T) {
		// max_tokens missing (the SDK always sends it: deleted here).
		_, err := sdk.Messages.New(ctx, hello, option.WithJSONDel("max_tokens"))
		wantAPIError(t, "missing max_tokens", err, http.StatusBadRequest, "invalid_request_error", "max_tokens")
		p := hello
		p.Model = "nope"
		_, err = sdk.Messages.New(ctx, p)
		wantAPIError(t, "unknown model", err, http.StatusNotFound, "not_found_error", "Model not found")
		p = hello
		p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewImageBlockBase64("image/png", "iVBORw0KGgo="))}
		_, err = sdk.Messages.New(ctx, p)
		wantAPIError(t, "image block", err, http.StatusBadRequest, "invalid_request_error", "`image` blocks are not supported")
	})

	t.Run("keys and overload", func(t *testing.T) {
		g := c.startFrontendArgs([]string{"--api-key", "sk-ant-good", "--router-queue-max", "0"})
		good := messagesClient(g, "sk-ant-good")
		g.waitFor(t, 30*time.Second, "the keyed frontend to serve the slow model", func() bool {
			_, err := good.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "slow", Messages: hello.Messages})
			return err == nil
		})
		bad := messagesClient(g, "sk-ant-bad")
		_, err := bad.Messages.New(ctx, hello)
		wantAPIError(t, "a bad x-api-key", err, http.StatusUnauthorized, "authentication_error", "x-api-key")

		// The slow mocker's one slot is held by a long story; one more
		// request finds no room and no queue: 529 with Retry-After.
		hold, cancel := context.WithCancel(ctx)
		defer cancel()
		story := good.Messages.NewStreaming(hold, anthropic.MessageNewParams{Model: "slow", MaxTokens: 2000,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Tell me a long story"))}})
		defer story.Close()
		for story.Next() && story.Current().Type != "content_block_delta" {
		}
		if err := story.Err(); err != nil {
			t.Fatalf("the long story: %v", err)
		}
		p := hello
		p.Model = "slow"
		_, err = good.Messages.New(ctx, p)
		if e := wantAPIError(t, "a request to the full model", err, 529, "overloaded_error", ""); e != nil {
			if n, err := strconv.Atoi(e.Response.Header.Get("Retry-After")); err != nil || n < 1 {
				t.Errorf("529 with Retry-After %q, want whole seconds, at least 1", e.Response.Header.Get("Retry-After"))
			}
		}
	})
}

// wantAPIError checks that err is the SDK's *anthropic.Error with status,
// Anthropic error type typ and a message containing phrase, and returns
// it (nil when it is not one).
func wantAPIError(t *testing.T, what string, err error, status int, typ, phrase string) *anthropic.Error {
	t.Helper()
	var e *anthropic.Error
	if !errors.As(err, &e) {
		t.Errorf("%s: error %v, want an *anthropic.Error", what, err)
		return nil
	}
	if e.StatusCode != status || string(e.Type()) != typ || !strings.Contains(e.Message, phrase) {
		t.Errorf("%s: %d %s %q (%s), want %d %s with %q", what, e.StatusCode, e.Type(), e.Message, e.RawJSON(), status, typ, phrase)
	}
	return e
}
