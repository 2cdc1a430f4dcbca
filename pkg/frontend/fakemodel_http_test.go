package frontend

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// The HTTP layer runs against any ServedModel: with a fake model and no
// stack, a chat request is answered unary and streamed, /v1/models lists
// the model, and another name is a 404 in OpenAI's shape.
func TestHTTPLayerServesAFakeModel(t *testing.T) {
	url := serveModels(t, Config{}, nil, &fakeModels{served: []ServedModel{&echoModel{name: "echo"}}})
	body := func(model string, stream bool) string {
		b, _ := json.Marshal(map[string]any{"model": model, "stream": stream,
			"messages": []map[string]string{{"role": "user", "content": "say it back"}}})
		return string(b)
	}

	r := request(t, http.MethodPost, url+"/v1/chat/completions", body("echo", false), nil)
	var unary struct {
		Model   string `json:"model"`
		Choices []struct {
			Message      struct{ Content string } `json:"message"`
			FinishReason string                   `json:"finish_reason"`
		} `json:"choices"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &unary) != nil || len(unary.Choices) != 1 ||
		unary.Choices[0].Message.Content != "say it back" || unary.Choices[0].FinishReason != "stop" || unary.Model != "echo" {
		t.Fatalf("unary: %d %s", r.status, r.body)
	}

	r = request(t, http.MethodPost, url+"/v1/chat/completions", body("echo", true), nil)
	var text strings.Builder
	for _, line := range strings.Split(string(r.body), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct{ Delta struct{ Content string } } `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		for _, ch := range c.Choices {
			text.WriteString(ch.Delta.Content)
		}
	}
	if r.status != http.StatusOK || text.String() != "say it back" || !strings.HasSuffix(strings.TrimSpace(string(r.body)), "data: [DONE]") {
		t.Fatalf("stream: %d %q", r.status, r.body)
	}

	if r := request(t, http.MethodGet, url+"/v1/models", "", nil); r.status != http.StatusOK || !strings.Contains(string(r.body), `"id":"echo"`) {
		t.Errorf("/v1/models: %d %s", r.status, r.body)
	}
	// A chat model is served on the chat, Responses and Messages routes.
	if r := request(t, http.MethodGet, url+"/health", "", nil); r.status != http.StatusOK ||
		!strings.Contains(string(r.body), `"endpoints":["/v1/chat/completions","/v1/responses","/v1/messages","/v1/models"]`) {
		t.Errorf("/health: %d %s", r.status, r.body)
	}
	// A name not served is a 404 that says what is.
	for _, c := range []struct{ model, want string }{
		{"other", "Model not found: other (served: echo)"},
		{"Echo", `Model not found: Echo (did you mean "echo"? names are case-sensitive)`},
	} {
		r = request(t, http.MethodPost, url+"/v1/chat/completions", body(c.model, false), nil)
		if e := errorInfo(t, r.body); r.status != http.StatusNotFound || e.Message != c.want {
			t.Errorf("model %q: %d %s, want the message %q", c.model, r.status, r.body, c.want)
		}
	}
	r = request(t, http.MethodGet, url+"/v1/models/other", "", nil)
	if e := errorInfo(t, r.body); r.status != http.StatusNotFound || e.Message != "Model not found: other (served: echo)" {
		t.Errorf("GET /v1/models/other: %d %s", r.status, r.body)
	}
}

// With no model served, the 404 says why: no worker registered one.
func TestModelNotFoundWithNothingServedSaysWhy(t *testing.T) {
	svc, err := New(Config{ShutdownGrace: -1}, Deps{Models: &fakeModels{}})
	if err != nil {
		t.Fatal(err)
	}
	err = svc.modelNotFound("demo", 0)
	if !errors.Is(err, ErrModelNotFound) || !strings.Contains(err.Error(), "no worker has registered one; start a worker") {
		t.Errorf("got %v", err)
	}
}
