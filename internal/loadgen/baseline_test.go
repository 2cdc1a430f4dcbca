package loadgen

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/openai"
)

// post sends body to path on h and returns the response body.
func post(t *testing.T, h http.Handler, path, body string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
	b, _ := io.ReadAll(rec.Body)
	return rec.Code, string(b)
}

// frames splits an SSE body into its data payloads.
func frames(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	for _, ev := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok {
			t.Fatalf("event %q is not a data frame", ev)
		}
		out = append(out, data)
	}
	return out
}

func TestBaselineChatStream(t *testing.T) {
	h := BaselineHandler(BaselineOptions{})
	code, body := post(t, h, "/v1/chat/completions",
		`{"model":"m","messages":[{"role":"user","content":"one two three"}],"max_tokens":3,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true}`)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	f := frames(t, body)
	if len(f) != 1+3+1+1+1 {
		t.Fatalf("%d frames, want role + 3 tokens + finish + usage + [DONE]:\n%s", len(f), body)
	}
	var chunks []openai.ChatCompletionChunk
	for _, d := range f[:len(f)-1] {
		var c openai.ChatCompletionChunk
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatalf("frame %s: %v", d, err)
		}
		if c.Object != openai.ObjectChatCompletionChunk || c.Model != "m" || (len(chunks) > 0 && c.ID != chunks[0].ID) {
			t.Fatalf("frame %s: wrong object, model or id", d)
		}
		chunks = append(chunks, c)
	}
	if d := chunks[0].Choices[0].Delta; d.Role != "assistant" || d.Content == nil || *d.Content != "" {
		t.Errorf("first chunk %+v, want the assistant role with empty content", d)
	}
	for i := 1; i <= 3; i++ {
		if d := chunks[i].Choices[0].Delta; d.Content == nil || *d.Content != " tok" || chunks[i].Choices[0].FinishReason != nil {
			t.Errorf("token chunk %d = %s, want content \" tok\"", i, f[i])
		}
	}
	if fr := chunks[4].Choices[0].FinishReason; fr == nil || *fr != openai.FinishLength {
		t.Errorf("finish chunk = %s, want finish_reason length", f[4])
	}
	if u := chunks[5].Usage; len(chunks[5].Choices) != 0 || u == nil || *u != (openai.Usage{PromptTokens: 3, CompletionTokens: 3, TotalTokens: 6}) {
		t.Errorf("usage chunk = %s, want empty choices and usage 3+3", f[5])
	}
	if f[len(f)-1] != "[DONE]" {
		t.Errorf("last frame %q, want [DONE]", f[len(f)-1])
	}
}

func TestBaselineCompletionsStreamWithoutUsage(t *testing.T) {
	h := BaselineHandler(BaselineOptions{Token: " x"})
	code, body := post(t, h, "/v1/completions", `{"model":"m","prompt":"a b","max_tokens":2,"stream":true}`)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	f := frames(t, body)
	if len(f) != 2+1+1 || f[3] != "[DONE]" {
		t.Fatalf("frames %q, want 2 tokens + finish + [DONE]", f)
	}
	for i, want := range []string{" x", " x", ""} {
		var c openai.Completion
		if err := json.Unmarshal([]byte(f[i]), &c); err != nil || c.Object != openai.ObjectTextCompletion || c.Choices[0].Text != want {
			t.Errorf("frame %d = %s, want text %q (%v)", i, f[i], want, err)
		}
	}
}

func TestBaselineUnaryAndErrors(t *testing.T) {
	h := BaselineHandler(BaselineOptions{})
	code, body := post(t, h, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`)
	var c openai.ChatCompletion
	if err := json.Unmarshal([]byte(body), &c); code != http.StatusOK || err != nil || *c.Choices[0].Message.Content != " tok tok" || c.Usage.CompletionTokens != 2 {
		t.Errorf("unary chat: %d %s (%v)", code, body, err)
	}
	code, body = post(t, h, "/v1/completions", `{"model":"m","prompt":"hi"}`)
	var cc openai.Completion
	if err := json.Unmarshal([]byte(body), &cc); code != http.StatusOK || err != nil || cc.Usage.CompletionTokens != 16 {
		t.Errorf("unary completions with the default length: %d %s (%v)", code, body, err)
	}
	if code, body := post(t, h, "/v1/chat/completions", `{"model":`); code != http.StatusBadRequest || !strings.Contains(body, `"error"`) {
		t.Errorf("bad JSON: %d %s, want 400 with an error body", code, body)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/chat/completions", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", rec.Code)
	}
}
