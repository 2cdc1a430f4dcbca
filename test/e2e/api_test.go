package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// object is a JSON request body.
type object = map[string]any

// response is the part of a chat completion, a chat chunk, a completion
// or a completion chunk that the tests look at.
type response struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
		Delta struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"delta"`
		Text         string  `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// text is the answer of a unary chat completion or completion.
func (r response) text() string {
	if len(r.Choices) == 0 {
		return ""
	}
	return r.Choices[0].Message.Content + r.Choices[0].Text
}

func (r response) finishReason() string {
	if len(r.Choices) == 0 || r.Choices[0].FinishReason == nil {
		return ""
	}
	return *r.Choices[0].FinishReason
}

// post sends body (an object, or raw bytes) as JSON and returns the
// response with its body read.
func (f *frontend) post(t testing.TB, path string, body any) (*http.Response, []byte) {
	t.Helper()
	raw, ok := body.([]byte)
	if !ok {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := f.http.Post(f.url+path, "application/json", bytes.NewReader(raw))
	if err != nil {
		f.fatalf(t, "POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.fatalf(t, "POST %s: reading the body: %v", path, err)
	}
	return resp, b
}

// unary sends a non-streaming request that must succeed.
func (f *frontend) unary(t testing.TB, path string, req object) response {
	t.Helper()
	resp, body := f.post(t, path, req)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: status %d, body %s", path, resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("POST %s: Content-Type %q, want application/json", path, ct)
	}
	if resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("POST %s: no x-request-id header", path)
	}
	var r response
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("POST %s: %v in %s", path, err, body)
	}
	return r
}

// streamed is what a client reassembles from an SSE stream.
type streamed struct {
	text         string
	finishReason string
	usage        *usage
	chunks       []response
	contentParts int // chunks that carried text
}

// stream sends a streaming request that must succeed and end with
// data: [DONE], and reassembles it.
func (f *frontend) stream(t testing.TB, path string, req object) streamed {
	t.Helper()
	req["stream"] = true
	resp, body := f.post(t, path, req)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s (stream): status %d, body %s", path, resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("POST %s (stream): Content-Type %q, want text/event-stream", path, ct)
	}
	return reassemble(t, path, body)
}

// reassemble checks that an SSE body ends with data: [DONE] and carries
// no error event, and reassembles it.
func reassemble(t testing.TB, path string, body []byte) streamed {
	t.Helper()
	events := parseSSE(t, body)
	if len(events) == 0 || events[len(events)-1].data != "[DONE]" {
		t.Fatalf("POST %s (stream): does not end with data: [DONE]:\n%s", path, body)
	}
	var s streamed
	for _, ev := range events[:len(events)-1] {
		if ev.event != "" {
			t.Fatalf("POST %s (stream): unexpected event %q: %s", path, ev.event, ev.data)
		}
		var c response
		if err := json.Unmarshal([]byte(ev.data), &c); err != nil {
			t.Fatalf("POST %s (stream): chunk %q: %v", path, ev.data, err)
		}
		s.chunks = append(s.chunks, c)
		if c.Usage != nil {
			if s.usage != nil {
				t.Errorf("POST %s (stream): usage sent twice", path)
			}
			s.usage = c.Usage
		}
		for _, ch := range c.Choices {
			if part := ch.Delta.Content + ch.Text; part != "" {
				s.text += part
				s.contentParts++
			}
			if ch.FinishReason != nil {
				if s.finishReason != "" {
					t.Errorf("POST %s (stream): finish_reason sent twice (%q, %q)", path, s.finishReason, *ch.FinishReason)
				}
				s.finishReason = *ch.FinishReason
			}
		}
	}
	return s
}

type sseEvent struct{ event, data string }

// parseSSE splits an event stream into its events.
func parseSSE(t testing.TB, body []byte) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur != (sseEvent{}) {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "data: "):
			cur.data += strings.TrimPrefix(line, "data: ")
		case strings.HasPrefix(line, "event: "):
			cur.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, ":"): // comment
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if cur != (sseEvent{}) {
		t.Fatalf("SSE stream ends without a blank line after %+v", cur)
	}
	return out
}

// apiError is the object of the frontend's error body, OpenAI's nested
// form {"error":{"message","type","param","code"}}.
type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

// decodeError checks that body is exactly {"error":{"message","type",
// "param","code"}}, param a string or null and code the status, and
// returns the object.
func decodeError(t testing.TB, status int, body []byte) apiError {
	t.Helper()
	e := decodeErrorObject(t, body)
	if e.Code != status {
		t.Errorf("error body code %d, status %d", e.Code, status)
	}
	return e
}

// decodeErrorObject checks that data (a response body or an SSE error
// event's data) is exactly {"error":{"message","type","param","code"}}
// with a non-empty message and type, and returns the object.
func decodeErrorObject(t testing.TB, data []byte) apiError {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatalf("error body is not a JSON object: %v: %s", err, data)
	}
	var fields map[string]json.RawMessage
	if len(top) != 1 || json.Unmarshal(top["error"], &fields) != nil || fields == nil {
		t.Fatalf("error body %s: want exactly one key, \"error\", holding an object", data)
	}
	if len(fields) != 4 || fields["message"] == nil || fields["type"] == nil || fields["param"] == nil || fields["code"] == nil {
		t.Errorf("error body %s: want exactly the fields message, type, param, code", data)
	}
	var e struct {
		Error apiError `json:"error"`
	}
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatalf("error body %s: %v", data, err)
	}
	if e.Error.Message == "" || e.Error.Type == "" {
		t.Errorf("error body %s: empty message or type", data)
	}
	if e.Error.Param != nil && *e.Error.Param == "" {
		t.Errorf("error body %s: an empty param, want a field name or null", data)
	}
	return e.Error
}

func userChat(model, content string, maxTokens int) object {
	return object{
		"model":      model,
		"messages":   []object{{"role": "user", "content": content}},
		"max_tokens": maxTokens,
	}
}

// get sends a GET and returns the response with its body read.
func (f *frontend) get(t testing.TB, path string) (*http.Response, []byte) {
	t.Helper()
	resp, err := f.http.Get(f.url + path)
	if err != nil {
		f.fatalf(t, "GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.fatalf(t, "GET %s: reading the body: %v", path, err)
	}
	return resp, b
}

// openChatStream starts a streamed chat asking for maxTokens tokens of
// the demo model (ignore_eos: an engine sampling from random weights
// must not end it early), reads its first chunks data lines and returns
// the response, whose Body the caller closes to hang up.
func (f *frontend) openChatStream(t testing.TB, maxTokens, chunks int) *http.Response {
	t.Helper()
	body := fmt.Sprintf(`{"model":"demo","stream":true,"max_tokens":%d,"ignore_eos":true,"messages":[{"role":"user","content":"a long answer, please"}]}`, maxTokens)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, f.url+chatPath, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	for n := 0; n < chunks && sc.Scan(); {
		if strings.HasPrefix(sc.Text(), "data: ") {
			n++
		}
	}
	return resp
}
