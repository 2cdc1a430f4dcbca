package frontend

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
)

// sseEvents parses a Responses event stream: each event's "event:" name
// and its decoded data. It fails the test when a name differs from the
// data's type or a [DONE] line appears.
func sseEvents(t *testing.T, body []byte) []openai.ResponseEvent {
	t.Helper()
	var evs []openai.ResponseEvent
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
		if d == "[DONE]" {
			t.Errorf("a Responses stream ends without [DONE]")
			continue
		}
		var ev openai.ResponseEvent
		if err := json.Unmarshal([]byte(d), &ev); err != nil {
			t.Fatalf("event %q: %v", d, err)
		}
		if ev.Type != name {
			t.Errorf("event named %q carries type %q", name, ev.Type)
		}
		evs = append(evs, ev)
		name = ""
	}
	return evs
}

func TestResponsesThroughTheStack(t *testing.T) {
	s := newStack(t, Config{}, pipeline.Config{})
	s.addWorker(t, "demo", helloEngine(t, 0))
	const body = `{"model":"demo","instructions":"Greet.","input":[{"role":"user","content":"hi"}],"max_output_tokens":5,"temperature":0.2`

	r := s.post(t, "/v1/responses", body+`}`)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("unary: %d %v %s", r.status, r.header, r.body)
	}
	var unary openai.Response
	if err := json.Unmarshal(r.body, &unary); err != nil {
		t.Fatal(err)
	}
	if unary.ID != "resp_"+r.header.Get("x-request-id") || unary.Object != "response" || unary.Model != "demo" || unary.Temperature != 0.2 || *unary.Instructions != "Greet." {
		t.Errorf("unary response %s", r.body)
	}
	// The engine stops at max_output_tokens: the answer is incomplete.
	if unary.Status != "incomplete" || unary.IncompleteDetails == nil || unary.IncompleteDetails.Reason != "max_output_tokens" {
		t.Errorf("status %q, incomplete_details %+v: want incomplete for max_output_tokens", unary.Status, unary.IncompleteDetails)
	}
	if unary.OutputText() != "Hello world" || len(unary.Output) != 1 || unary.Output[0].Type != "message" || unary.Output[0].Role != "assistant" {
		t.Errorf("output %+v, want one assistant message \"Hello world\"", unary.Output)
	}
	if u := unary.Usage; u == nil || u.OutputTokens != 5 || u.InputTokens == 0 || u.TotalTokens != u.InputTokens+5 {
		t.Errorf("usage %+v", unary.Usage)
	}

	r = s.post(t, "/v1/responses", body+`,"stream":true}`)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %v %s", r.status, r.header, r.body)
	}
	evs := sseEvents(t, r.body)
	if len(evs) < 3 || evs[0].Type != "response.created" || evs[1].Type != "response.in_progress" {
		t.Fatalf("stream starts %s", r.body)
	}
	var text strings.Builder
	for i, ev := range evs {
		if ev.SequenceNumber != i {
			t.Errorf("event %d (%s) has sequence_number %d", i, ev.Type, ev.SequenceNumber)
		}
		if ev.Type == "response.output_text.delta" {
			text.WriteString(*ev.Delta)
		}
	}
	last := evs[len(evs)-1]
	if last.Type != "response.incomplete" || last.Response == nil {
		t.Fatalf("last event %s, want response.incomplete with the response", last.Type)
	}
	if text.String() != "Hello world" || last.Response.OutputText() != "Hello world" {
		t.Errorf("streamed deltas %q, final text %q: want \"Hello world\"", text.String(), last.Response.OutputText())
	}
	// The same answer as the unary request, but for its id and times.
	final := *last.Response
	final.ID, final.CreatedAt = unary.ID, unary.CreatedAt
	final.Output[0].ID = unary.Output[0].ID
	if diff := cmp.Diff(unary, final); diff != "" {
		t.Errorf("streamed response differs from the unary one (-unary +streamed):\n%s", diff)
	}

	m := string(s.get(t, "/metrics").body)
	for _, want := range []string{`endpoint="responses",error_type="",model="demo",request_type="unary",status="success"} 1`, `endpoint="responses",error_type="",model="demo",request_type="stream",status="success"} 1`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s:\n%s", want, grepLines(m, "requests_total"))
		}
	}
}

func TestResponsesErrors(t *testing.T) {
	s := newStack(t, Config{}, pipeline.Config{})
	s.addWorker(t, "demo", helloEngine(t, 0))
	for _, c := range []struct {
		name, body string
		status     int
		phrase     string
		param      string
	}{
		{"previous_response_id", `{"model":"demo","input":"x","previous_response_id":"resp_1"}`, 400, "does not store them", "previous_response_id"},
		{"background", `{"model":"demo","input":"x","background":true}`, 400, "does not store them", "background"},
		{"hosted tool", `{"model":"demo","input":"x","tools":[{"type":"web_search"}]}`, 400, "`web_search` is not supported", "tools[0].type"},
		{"image input", `{"model":"demo","input":[{"role":"user","content":[{"type":"input_image","image_url":"http://x/y.png"}]}]}`, 400, "`input_image` is not supported", "input[0].content[0].type"},
		{"unknown field", `{"model":"demo","input":"x","bogus":1}`, 400, "Unsupported parameter", "bogus"},
		{"unknown model", `{"model":"nope","input":"x"}`, 404, "Model not found", ""},
		{"unknown model, streamed", `{"model":"nope","input":"x","stream":true}`, 404, "Model not found", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := s.post(t, "/v1/responses", c.body)
			e := errorInfo(t, r.body)
			if r.status != c.status || !strings.Contains(e.Message, c.phrase) {
				t.Errorf("%d %q, want %d with %q", r.status, e.Message, c.status, c.phrase)
			}
			if got := ""; e.Param != nil {
				if got = *e.Param; got != c.param {
					t.Errorf("param %q, want %q", got, c.param)
				}
			} else if c.param != "" {
				t.Errorf("param null, want %q", c.param)
			}
		})
	}
}

// A stream that breaks after its first event ends with response.failed,
// which carries the error.
func TestResponsesStreamFailsWithResponseFailed(t *testing.T) {
	s := newStack(t, Config{StreamTimeout: 300 * time.Millisecond}, pipeline.Config{})
	s.addWorker(t, "demo", &hangEngine{})
	r := s.post(t, "/v1/responses", `{"model":"demo","input":"x","stream":true}`)
	if r.status != http.StatusOK {
		t.Fatalf("%d %s", r.status, r.body)
	}
	evs := sseEvents(t, r.body)
	last := evs[len(evs)-1]
	if last.Type != "response.failed" || last.Response.Status != "failed" || last.Response.Error == nil || !strings.Contains(last.Response.Error.Message, "timed out") {
		t.Fatalf("stream %s\nwant it to end with response.failed naming the timeout", r.body)
	}
	if last.SequenceNumber != len(evs)-1 || last.Response.OutputText() != "H" {
		t.Errorf("response.failed #%d of %d events, text %q: want the last event with the text so far", last.SequenceNumber, len(evs), last.Response.OutputText())
	}
	m := string(s.get(t, "/metrics").body)
	if !strings.Contains(m, `endpoint="responses",error_type="response_timeout",model="demo",request_type="stream",status="error"} 1`) {
		t.Errorf("metrics:\n%s", grepLines(m, "requests_total"))
	}
}
