package frontend

import (
	"strings"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/pipeline"
)

// Busy thresholds can be read and changed at run time, per model; partial
// updates keep the other thresholds; bad updates change nothing.
func TestBusyThresholdEndpoint(t *testing.T) {
	s := newStack(t, Config{}, pipeline.Config{RouterMode: pipeline.RouterKV})
	startPositionWorkers(t, s, 0)

	get := func() string {
		t.Helper()
		r := s.get(t, "/busy_threshold")
		if r.status != 200 {
			t.Fatalf("GET: %d %s", r.status, r.body)
		}
		return strings.TrimSpace(string(r.body))
	}
	if got, want := get(), `{"thresholds":[{"model":"demo"}]}`; got != want {
		t.Errorf("GET before any change: %s, want %s", got, want)
	}
	r := s.post(t, "/busy_threshold", `{"model":"demo","active_decode_blocks_threshold":0.85}`)
	if got := strings.TrimSpace(string(r.body)); r.status != 200 || got != `{"model":"demo","active_decode_blocks_threshold":0.85}` {
		t.Errorf("POST decode threshold: %d %s", r.status, got)
	}
	r = s.post(t, "/busy_threshold", `{"model":"demo","active_prefill_tokens_threshold":20000}`)
	want := `{"model":"demo","active_decode_blocks_threshold":0.85,"active_prefill_tokens_threshold":20000}`
	if got := strings.TrimSpace(string(r.body)); r.status != 200 || got != want {
		t.Errorf("POST prefill threshold: %d %s, want %s (the decode threshold kept)", r.status, got, want)
	}
	if r := s.post(t, "/busy_threshold", `{"model":"demo"}`); r.status != 200 || strings.TrimSpace(string(r.body)) != want {
		t.Errorf("POST with the model only reads: %d %s", r.status, r.body)
	}

	for _, c := range []struct {
		body   string
		status int
		phrase string
	}{
		{`{"model":"demo","active_decode_blocks_threshold":1.5}`, 400, "not in [0, 1]"},
		{`{"model":"demo","active_prefill_tokens_threshold":-1}`, 400, "busy threshold"},
		{`{"model":"demo","busy":1}`, 400, "unknown field"},
		{`{"active_decode_blocks_threshold":0.5}`, 400, "model is required"},
		{`{"model":"nope","active_decode_blocks_threshold":0.5}`, 404, "Model not found: nope"},
		{`not json`, 400, "busy threshold"},
	} {
		r := s.post(t, "/busy_threshold", c.body)
		e := errorInfo(t, r.body)
		if code, _ := e.Status(); r.status != c.status || code != c.status || !strings.Contains(e.Message, c.phrase) {
			t.Errorf("POST %s: %d %s; want %d with %q", c.body, r.status, r.body, c.status, c.phrase)
		}
	}
	if got := get(); got != `{"thresholds":[`+want+`]}` {
		t.Errorf("after refused updates: %s", got)
	}
}

func TestBusyThresholdNeedsKVMode(t *testing.T) {
	s := newStack(t, Config{}, pipeline.Config{})
	startPositionWorkers(t, s, 0)
	if r := s.get(t, "/busy_threshold"); r.status != 200 || strings.TrimSpace(string(r.body)) != `{"thresholds":[]}` {
		t.Errorf("GET in round-robin mode: %d %s", r.status, r.body)
	}
	if r := s.post(t, "/busy_threshold", `{"model":"demo","active_decode_blocks_threshold":0.5}`); r.status != 400 || !strings.Contains(string(r.body), "--router-mode kv") {
		t.Errorf("POST in round-robin mode: %d %s", r.status, r.body)
	}
}
