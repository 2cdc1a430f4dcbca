package preprocessor

import (
	"errors"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/openai"
)

// The admission queue's priority jump is agent_hints.latency_sensitivity,
// else agent_hints.priority (seconds, > 0).
func TestLatencySensitivityIsThePriorityJump(t *testing.T) {
	m := demoModel(t)
	for _, c := range []struct {
		hints string
		want  float64 // 0: none
	}{
		{`{"latency_sensitivity":5.5,"priority":3}`, 5.5},
		{`{"latency_sensitivity":0}`, 0},
		{`{"latency_sensitivity":-2}`, 0},
		{`{"priority":3}`, 3},
		{`{"latency_sensitivity":0,"priority":2.5}`, 2.5},
		{`{"priority":-1}`, 0},
		{`{"priority":0}`, 0},
		{`{"latency_sensitivity":"x"}`, 0},
	} {
		p, err := m.PrepareChat(decodeChat(t, `{"model":"demo","messages":[{"role":"user","content":"hi"}],"nvext":{"agent_hints":`+c.hints+`}}`))
		if err != nil {
			t.Fatal(err)
		}
		var got float64
		if r := p.Request.Routing; r != nil && r.PriorityJump != nil {
			got = *r.PriorityJump
		}
		if got != c.want {
			t.Errorf("agent_hints %s: priority jump %v, want %v", c.hints, got, c.want)
		}
	}
}

// A top-level nvext.priority is not an nvext field: 400, naming it.
func TestTopLevelNvextPriorityIsRefused(t *testing.T) {
	_, err := openai.DecodeChat([]byte(`{"model":"demo","messages":[{"role":"user","content":"hi"}],"nvext":{"priority":3}}`), openai.DecodeOptions{})
	var ve *openai.ValidationError
	if !errors.As(err, &ve) || ve.Param != "nvext.priority" {
		t.Fatalf("nvext.priority: %v, want a validation error on nvext.priority", err)
	}
}
