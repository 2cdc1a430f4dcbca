package frontend

import (
	"encoding/json"
	"strings"
	"testing"
)

// Without NATS there are no KV events: kv mode falls back, visibly, to the
// approximate mode, where each routing decision stands in for the events.
// Prompts that share a long prefix then follow the first one's worker.
func TestKVRoutingApproximateModeFollowsThePrefix(t *testing.T) {
	s := newStack(t, Config{RouterMode: RouterKV})
	engines := startPositionWorkers(t, s, 0)

	var health struct {
		KVRouting map[string]string `json:"kv_routing"`
	}
	if err := json.Unmarshal(s.get(t, "/health").body, &health); err != nil {
		t.Fatal(err)
	}
	if mode := health.KVRouting["demo"]; !strings.HasPrefix(mode, "approximate") || !strings.Contains(mode, "no KV events") {
		t.Errorf("health kv_routing %q: the fallback must be visible", mode)
	}
	if m := string(s.get(t, "/metrics").body); !strings.Contains(m, `dynamo_frontend_kv_router_mode{mode="approximate",model="demo"} 1`) {
		t.Errorf("the mode gauge is missing:\n%s", grepLines(m, "kv_router_mode"))
	}

	prefix := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 40)
	send := func(suffix string) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"model": "demo", "prompt": prefix + suffix, "max_tokens": 2})
		if r := s.post(t, "/v1/completions", string(body)); r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
	}
	send("first")
	first := 0
	if engines[1].calls.Load() == 1 {
		first = 1
	}
	for i := range 6 {
		send(strings.Repeat("x", i+1))
	}
	if got := engines[first].calls.Load(); got != 7 {
		t.Errorf("the worker that served the prefix first got %d of 7 requests sharing it; the other got %d", got, engines[1-first].calls.Load())
	}
	m := string(s.get(t, "/metrics").body)
	if !strings.Contains(m, "dynamo_router_overhead_total_ms_count") {
		t.Errorf("router overhead metrics missing:\n%s", grepLines(m, "router"))
	}
}
