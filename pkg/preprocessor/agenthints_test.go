package preprocessor

import "testing"

func TestLatencySensitivityIsThePriorityJump(t *testing.T) {
	m := demoModel(t)
	for _, c := range []struct {
		hints string
		want  float64 // 0: none
	}{
		{`{"latency_sensitivity":5.5,"priority":3}`, 5.5},
		{`{"latency_sensitivity":0}`, 0},
		{`{"latency_sensitivity":-2}`, 0},
		{`{"priority":3}`, 0},
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
