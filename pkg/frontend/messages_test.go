package frontend

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/anthropic"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
)

// messageEventsOf parses a Messages event stream into its events' data. It
// fails the test when an event's name differs from its data's type or a
// [DONE] line appears.
func messageEventsOf(t *testing.T, body []byte) []map[string]json.RawMessage {
	t.Helper()
	var evs []map[string]json.RawMessage
	name := ""
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			name = n
			continue
		}
		d, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev map[string]json.RawMessage
		if err := json.Unmarshal([]byte(d), &ev); err != nil {
			t.Fatalf("event %q: %v (a Messages stream has no [DONE])", d, err)
		}
		if typ := string(ev["type"]); typ != strconv.Quote(name) {
			t.Errorf("event named %q carries type %s", name, typ)
		}
		evs = append(evs, ev)
		name = ""
	}
	return evs
}

// anthropicError reads an error body in Anthropic's shape.
func anthropicError(t *testing.T, body []byte) anthropic.ErrorInfo {
	t.Helper()
	var e anthropic.ErrorBody
	if err := json.Unmarshal(body, &e); err != nil || e.Type != "error" || e.Error.Type == "" || e.Error.Message == "" {
		t.Fatalf("error body %s: want Anthropic's {\"type\":\"error\",\"error\":{\"type\",\"message\"}}", body)
	}
	return e.Error
}

func TestMessagesThroughTheStack(t *testing.T) {
	s := newStack(t, Config{}, pipeline.Config{})
	s.addWorker(t, "demo", helloEngine(t, 0))
	const body = `{"model":"demo","system":"Greet.","messages":[{"role":"user","content":"hi"}],"max_tokens":5`

	r := s.post(t, "/v1/messages", body+`}`)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("unary: %d %v %s", r.status, r.header, r.body)
	}
	var unary anthropic.Message
	if err := json.Unmarshal(r.body, &unary); err != nil {
		t.Fatal(err)
	}
	if unary.ID != "msg_"+r.header.Get("x-request-id") || unary.Type != "message" || unary.Role != "assistant" || unary.Model != "demo" {
		t.Errorf("unary message %s", r.body)
	}
	// The engine stops at max_tokens.
	if len(unary.Content) != 1 || *unary.Content[0].Text != "Hello world" || *unary.StopReason != anthropic.StopMaxTokens || unary.Usage.OutputTokens != 5 || unary.Usage.InputTokens == 0 {
		t.Errorf("unary message %s: want \"Hello world\", stop_reason max_tokens, 5 output tokens", r.body)
	}

	r = s.post(t, "/v1/messages", body+`,"stream":true}`)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %v %s", r.status, r.header, r.body)
	}
	var types []string
	var text strings.Builder
	for _, ev := range messageEventsOf(t, r.body) {
		var typ string
		_ = json.Unmarshal(ev["type"], &typ)
		types = append(types, typ)
		var d anthropic.BlockDelta
		if typ == "content_block_delta" && json.Unmarshal(ev["delta"], &d) == nil && d.Text != nil {
			text.WriteString(*d.Text)
		}
	}
	want := "message_start ping content_block_start content_block_delta content_block_stop message_delta message_stop"
	if got := strings.Join(dedup(types), " "); got != want || text.String() != "Hello world" {
		t.Errorf("events %v, text %q; want %s with \"Hello world\"", types, text.String(), want)
	}

	// count_tokens counts the prompt the model sees.
	r = s.post(t, "/v1/messages/count_tokens", `{"model":"demo","system":"Greet.","messages":[{"role":"user","content":"hi"}]}`)
	var count anthropic.CountTokensResponse
	if r.status != http.StatusOK || json.Unmarshal(r.body, &count) != nil || count.InputTokens != unary.Usage.InputTokens+unary.Usage.CacheReadInputTokens {
		t.Errorf("count_tokens: %d %s, want the unary answer's %d input tokens", r.status, r.body, unary.Usage.InputTokens+unary.Usage.CacheReadInputTokens)
	}

	m := string(s.get(t, "/metrics").body)
	for _, want := range []string{`endpoint="messages",error_type="",model="demo",request_type="unary",status="success"} 1`, `endpoint="messages",error_type="",model="demo",request_type="stream",status="success"} 1`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s:\n%s", want, grepLines(m, "requests_total"))
		}
	}
}

// dedup drops repeats of the same element in a row.
func dedup(s []string) []string {
	var out []string
	for _, v := range s {
		if len(out) == 0 || out[len(out)-1] != v {
			out = append(out, v)
		}
	}
	return out
}

func TestMessagesErrorsInAnthropicShape(t *testing.T) {
	s := newStack(t, Config{APIKeys: []string{"sk-ant"}, BodyLimit: 4096}, pipeline.Config{})
	s.addWorker(t, "demo", helloEngine(t, 0))
	send := func(path, body string, header http.Header) response {
		method := http.MethodPost
		if body == "" {
			method = http.MethodGet
		}
		req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = header
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return response{resp.StatusCode, resp.Header, b}
	}
	key := http.Header{"X-Api-Key": {"sk-ant"}, "Anthropic-Version": {"2023-06-01"}}
	const ok = `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`
	for _, c := range []struct {
		name, path, body string
		header           http.Header
		status           int
		typ, phrase      string
	}{
		{"x-api-key accepted", "/v1/messages", ok, key, 200, "", ""},
		{"no key", "/v1/messages", ok, http.Header{}, 401, "authentication_error", "x-api-key"},
		{"wrong x-api-key", "/v1/messages", ok, http.Header{"X-Api-Key": {"sk-bad"}}, 401, "authentication_error", "invalid x-api-key"},
		{"wrong key, count_tokens", "/v1/messages/count_tokens", ok, http.Header{"X-Api-Key": {"sk-bad"}}, 401, "authentication_error", "invalid x-api-key"},
		{"missing max_tokens", "/v1/messages", `{"model":"demo","messages":[{"role":"user","content":"hi"}]}`, key, 400, "invalid_request_error", "max_tokens: field required"},
		{"image block", "/v1/messages", `{"model":"demo","max_tokens":2,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"http://x/y.png"}}]}]}`, key, 400, "invalid_request_error", "`image` blocks are not supported"},
		{"unknown model", "/v1/messages", `{"model":"nope","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`, key, 404, "not_found_error", "Model not found"},
		{"unknown model, streamed", "/v1/messages", `{"model":"nope","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"stream":true}`, key, 404, "not_found_error", "Model not found"},
		{"unknown model, count_tokens", "/v1/messages/count_tokens", `{"model":"nope","messages":[{"role":"user","content":"hi"}]}`, key, 404, "not_found_error", "Model not found"},
		{"unknown route under /v1/messages", "/v1/messages/batches", ok, key, 404, "not_found_error", "Route not found"},
		{"body too large", "/v1/messages", `{"model":"demo","max_tokens":2,"messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`, key, 413, "request_too_large", "too large"},
		{"method not allowed", "/v1/messages/count_tokens", "", key, 405, "invalid_request_error", "Method not allowed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := send(c.path, c.body, c.header)
			if c.status == 200 {
				if r.status != 200 {
					t.Fatalf("%d %s", r.status, r.body)
				}
				return
			}
			e := anthropicError(t, r.body)
			if r.status != c.status || e.Type != c.typ || !strings.Contains(e.Message, c.phrase) {
				t.Errorf("%d %s, want %d %s with %q", r.status, r.body, c.status, c.typ, c.phrase)
			}
		})
	}
	// The OpenAI routes keep OpenAI's shape, and take x-api-key too.
	r := send("/v1/chat/completions", ok, http.Header{"X-Api-Key": {"sk-bad"}})
	if e := errorInfo(t, r.body); r.status != 401 || e.Message != msgWrongKey {
		t.Errorf("chat with a wrong x-api-key: %d %s", r.status, r.body)
	}
	if r := send("/v1/chat/completions", ok, key); r.status != 200 {
		t.Errorf("chat with x-api-key: %d %s", r.status, r.body)
	}
}

// An overload refusal is Anthropic's 529 overloaded_error with
// Retry-After on the Messages API, whatever the OpenAI routes' overload
// status (here the default 503).
func TestMessagesOverloadIs529(t *testing.T) {
	s := newStack(t, Config{}, pipeline.Config{Queue: &pipeline.QueueConfig{Max: 0}})
	eng := &gateEngine{open: make(chan struct{}), seen: make(chan string, 16), seqs: 1}
	s.addWorker(t, "demo", eng)
	const body = `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`
	var wg sync.WaitGroup
	var held response
	wg.Go(func() { held = s.post(t, "/v1/messages", body) })
	<-eng.seen
	r := s.post(t, "/v1/messages", body)
	chat := s.post(t, "/v1/chat/completions", body)
	close(eng.open)
	wg.Wait()
	if n, err := strconv.Atoi(r.header.Get("Retry-After")); r.status != anthropic.StatusOverloaded || err != nil || n < 1 || anthropicError(t, r.body).Type != "overloaded_error" {
		t.Errorf("a message to the saturated model: %d, Retry-After %q, %s; want 529 overloaded_error with Retry-After", r.status, r.header.Get("Retry-After"), r.body)
	}
	if chat.status != http.StatusServiceUnavailable {
		t.Errorf("a chat request to the saturated model: %d, want the configured 503", chat.status)
	}
	if held.status != http.StatusOK {
		t.Errorf("the held request: %d %s", held.status, held.body)
	}
}

// A stream that breaks after its first event ends with an error event in
// Anthropic's shape.
func TestMessagesStreamFailsWithErrorEvent(t *testing.T) {
	s := newStack(t, Config{StreamTimeout: 300 * time.Millisecond}, pipeline.Config{})
	s.addWorker(t, "demo", &hangEngine{})
	r := s.post(t, "/v1/messages", `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stream":true}`)
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.body)
	}
	evs := messageEventsOf(t, r.body)
	last := evs[len(evs)-1]
	var e anthropic.ErrorInfo
	if string(last["type"]) != `"error"` || json.Unmarshal(last["error"], &e) != nil || e.Type != "timeout_error" || !strings.Contains(e.Message, "timed out") {
		t.Fatalf("stream %s\nwant it to end with an error event of type timeout_error", r.body)
	}
	if string(evs[0]["type"]) != `"message_start"` {
		t.Errorf("stream starts with %s", evs[0]["type"])
	}
}
