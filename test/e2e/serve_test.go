package e2e

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
)

// TestServe runs the happy path on each discovery back-end and request
// plane: one frontend, one mocker process with two workers.
func TestServe(t *testing.T) {
	for _, tc := range []struct{ name, discovery, plane string }{
		{"etcd+tcp", "etcd", "tcp"},
		{"etcd+nats", "etcd", "nats"},
		{"file+tcp", "file", "tcp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, tc.discovery, tc.plane)
			c.startMocker("mocker", append([]string{"--num-workers", "2"}, deterministic...))
			f := c.startFrontend()
			f.waitModels(t, "demo")
			t.Run("models", func(t *testing.T) { testModels(t, f) })
			t.Run("chat", func(t *testing.T) { testUnaryAndStream(t, f, "/v1/chat/completions") })
			t.Run("completions", func(t *testing.T) { testUnaryAndStream(t, f, "/v1/completions") })
			t.Run("chat stop string", func(t *testing.T) { testStop(t, f, "/v1/chat/completions") })
			t.Run("completions stop string", func(t *testing.T) { testStop(t, f, "/v1/completions") })
			t.Run("openai-go chat", func(t *testing.T) { testSDKChat(t, f) })
			t.Run("openai-go completions", func(t *testing.T) { testSDKCompletions(t, f) })
			t.Run("logprobs, chat and completions", func(t *testing.T) { testLogprobs(t, f) })
		})
	}
}

func testModels(t *testing.T, f *frontend) {
	resp, body := f.get(t, "/v1/models/demo")
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"id":"demo"`) || !strings.Contains(string(body), `"max_model_len":4096`) {
		t.Errorf("GET /v1/models/demo: %d %s, want the model with its context window", resp.StatusCode, body)
	}
	resp, body = f.get(t, "/v1/models/nope")
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /v1/models/nope: %d %s, want 404", resp.StatusCode, body)
	} else if e := decodeError(t, resp.StatusCode, body); !strings.Contains(e.Message, "nope") {
		t.Errorf("GET /v1/models/nope: message %q does not name the model", e.Message)
	}
}

// request returns a request for path (chat or completions) whose answer
// depends only on the seed, the prompt and max_tokens.
func request(path, prompt string, seed, maxTokens int) object {
	if path == "/v1/chat/completions" {
		r := userChat("demo", prompt, maxTokens)
		r["seed"] = seed
		return r
	}
	return object{"model": "demo", "prompt": prompt, "max_tokens": maxTokens, "seed": seed}
}

// testUnaryAndStream checks that a unary answer is cut at max_tokens with
// finish_reason length and honest usage, and that the same request
// streamed reassembles to the same text with the same usage.
func testUnaryAndStream(t *testing.T, f *frontend, path string) {
	const maxTokens = 24
	chat := path == "/v1/chat/completions"
	req := request(path, "Tell me about the weather in Paris.", 7, maxTokens)
	u := f.unary(t, path, req)
	wantObject, idPrefix := "text_completion", "cmpl-"
	if chat {
		wantObject, idPrefix = "chat.completion", "chatcmpl-"
		if u.Choices[0].Message.Role != "assistant" {
			t.Errorf("role %q, want assistant", u.Choices[0].Message.Role)
		}
	}
	if u.Object != wantObject || !strings.HasPrefix(u.ID, idPrefix) || u.Model != "demo" || len(u.Choices) != 1 {
		t.Errorf("unary: object %q id %q model %q choices %d; want %s, %s..., demo, 1", u.Object, u.ID, u.Model, len(u.Choices), wantObject, idPrefix)
	}
	if u.text() == "" || u.finishReason() != "length" {
		t.Fatalf("unary: text %q finish_reason %q; want some text and length", u.text(), u.finishReason())
	}
	if u.Usage == nil || u.Usage.CompletionTokens != maxTokens || u.Usage.PromptTokens == 0 ||
		u.Usage.TotalTokens != u.Usage.PromptTokens+u.Usage.CompletionTokens {
		t.Errorf("unary usage %+v; want %d completion tokens and an honest total", u.Usage, maxTokens)
	}

	req["stream_options"] = object{"include_usage": true}
	s := f.stream(t, path, req)
	if s.text != u.text() {
		t.Errorf("streamed text %q\nunary text    %q", s.text, u.text())
	}
	if s.finishReason != "length" {
		t.Errorf("streamed finish_reason %q, want length", s.finishReason)
	}
	if s.usage == nil || u.Usage == nil || *s.usage != *u.Usage {
		t.Errorf("streamed usage %+v, unary usage %+v", s.usage, u.Usage)
	} else if s.contentParts == 0 || s.contentParts > s.usage.CompletionTokens {
		t.Errorf("%d chunks carried text for %d completion tokens", s.contentParts, s.usage.CompletionTokens)
	}
	last := s.chunks[len(s.chunks)-1]
	if last.Usage == nil || len(last.Choices) != 0 {
		t.Errorf("the last chunk before [DONE] should carry usage and no choices: %+v", last)
	}
	wantChunk := wantObject
	if chat {
		wantChunk = "chat.completion.chunk"
		if s.chunks[0].Choices[0].Delta.Role != "assistant" {
			t.Errorf("first chunk role %q, want assistant", s.chunks[0].Choices[0].Delta.Role)
		}
	}
	for _, c := range s.chunks {
		if c.ID != s.chunks[0].ID || c.Object != wantChunk || c.Model != "demo" {
			t.Fatalf("chunk id %q object %q model %q; want %q %q demo", c.ID, c.Object, c.Model, s.chunks[0].ID, wantChunk)
		}
	}
}

// testStop learns an answer, then asks again with a stop string taken
// from the middle of it: the answer must end just before it.
func testStop(t *testing.T, f *frontend, path string) {
	const maxTokens = 40
	req := request(path, "Write a long story.", 11, maxTokens)
	full := f.unary(t, path, req).text()
	stop, want := stopString(t, full)
	req["stop"] = stop
	u := f.unary(t, path, req)
	if u.text() != want || u.finishReason() != "stop" {
		t.Errorf("with stop %q: text %q finish_reason %q\nwant text %q finish_reason stop", stop, u.text(), u.finishReason(), want)
	}
	if u.Usage == nil || u.Usage.CompletionTokens >= maxTokens || u.Usage.CompletionTokens == 0 {
		t.Errorf("with stop %q: usage %+v; want fewer than %d completion tokens", stop, u.Usage, maxTokens)
	}
	req["stream_options"] = object{"include_usage": true}
	s := f.stream(t, path, req)
	if s.text != want || s.finishReason != "stop" {
		t.Errorf("streamed with stop %q: text %q finish_reason %q\nwant text %q finish_reason stop", stop, s.text, s.finishReason, want)
	}
	if s.usage == nil || u.Usage == nil || *s.usage != *u.Usage {
		t.Errorf("streamed usage %+v, unary usage %+v", s.usage, u.Usage)
	}
}

// stopString picks three characters from the middle of text and returns
// them with the text before their first occurrence.
func stopString(t *testing.T, text string) (stop, before string) {
	t.Helper()
	r := []rune(text)
	for i := len(r) / 2; i+3 <= len(r); i++ {
		stop = string(r[i : i+3])
		if strings.TrimSpace(stop) != stop {
			continue // keep whitespace off the edges, for a readable failure
		}
		if n := strings.Index(text, stop); n > 0 {
			return stop, text[:n]
		}
	}
	t.Fatalf("no stop string found in %q", text)
	return "", ""
}

// testSDKChat uses the official SDK for what an application does: a chat
// completion, the same streamed through the accumulator, a stop string,
// and an API error.
func testSDKChat(t *testing.T, f *frontend) {
	ctx := t.Context()
	const prompt, maxTokens = "What is the capital of France?", 16
	params := openai.ChatCompletionNewParams{
		Model:     "demo",
		Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
		MaxTokens: openai.Int(maxTokens),
		Seed:      openai.Int(3),
	}
	c, err := f.sdk.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	// The same request through net/http gets the same answer.
	raw := f.unary(t, "/v1/chat/completions", request("/v1/chat/completions", prompt, 3, maxTokens))
	if len(c.Choices) != 1 || c.Choices[0].Message.Content != raw.text() || c.Choices[0].FinishReason != "length" || c.Model != "demo" {
		t.Fatalf("SDK: %+v\nnet/http text %q", c, raw.text())
	}
	if c.Usage.CompletionTokens != maxTokens || c.Usage.TotalTokens != c.Usage.PromptTokens+maxTokens {
		t.Errorf("SDK usage %+v", c.Usage)
	}

	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := f.sdk.Chat.Completions.NewStreaming(ctx, params)
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		if !acc.AddChunk(stream.Current()) {
			t.Fatalf("accumulator refused chunk %s", stream.Current().RawJSON())
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != c.Choices[0].Message.Content || acc.Choices[0].FinishReason != "length" {
		t.Errorf("SDK stream accumulated %+v\nunary text %q", acc.Choices, c.Choices[0].Message.Content)
	}
	if acc.Usage.CompletionTokens != maxTokens || acc.Usage.PromptTokens != c.Usage.PromptTokens {
		t.Errorf("SDK stream usage %+v, unary usage %+v", acc.Usage, c.Usage)
	}

	stop, want := stopString(t, c.Choices[0].Message.Content)
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{}
	params.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{stop}}
	c, err = f.sdk.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if c.Choices[0].Message.Content != want || c.Choices[0].FinishReason != "stop" {
		t.Errorf("SDK with stop %q: %q (%s), want %q (stop)", stop, c.Choices[0].Message.Content, c.Choices[0].FinishReason, want)
	}

	params.Model = "nope"
	_, err = f.sdk.Chat.Completions.New(ctx, params)
	if apiErr := (*openai.Error)(nil); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
		t.Errorf("SDK, unknown model: err %v, want an *openai.Error with status 404", err)
	}
}

func testSDKCompletions(t *testing.T, f *frontend) {
	ctx := t.Context()
	const prompt, maxTokens = "Once upon a time", 12
	params := openai.CompletionNewParams{
		Model:     "demo",
		Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
		MaxTokens: openai.Int(maxTokens),
		Seed:      openai.Int(5),
	}
	c, err := f.sdk.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Choices) != 1 || c.Choices[0].Text == "" || c.Choices[0].FinishReason != "length" || c.Usage.CompletionTokens != maxTokens {
		t.Fatalf("SDK completion: %+v", c)
	}
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := f.sdk.Completions.NewStreaming(ctx, params)
	defer stream.Close()
	var text, finish string
	var completionTokens int64
	for stream.Next() {
		chunk := stream.Current()
		for _, ch := range chunk.Choices {
			text += ch.Text
			if ch.FinishReason != "" {
				finish = string(ch.FinishReason)
			}
		}
		if chunk.Usage.CompletionTokens > 0 {
			completionTokens = chunk.Usage.CompletionTokens
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text != c.Choices[0].Text || finish != "length" || completionTokens != maxTokens {
		t.Errorf("SDK completion stream: text %q finish %q completion_tokens %d\nunary text %q", text, finish, completionTokens, c.Choices[0].Text)
	}
}
