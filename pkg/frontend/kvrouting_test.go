package frontend

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/pipeline"
)

// Without NATS there are no KV events: kv mode falls back, visibly, to the
// approximate mode, where each routing decision stands in for the events.
// Prompts that share a long prefix then follow the first one's worker.
func TestKVRoutingApproximateModeFollowsThePrefix(t *testing.T) {
	s := newStack(t, Config{}, pipeline.Config{RouterMode: pipeline.RouterKV})
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

func TestKVRoutingQueryAndWorkerField(t *testing.T) {
	s := newStack(t, Config{}, pipeline.Config{RouterMode: pipeline.RouterKV})
	engines := startPositionWorkers(t, s, 0)
	prefix := strings.Repeat("Pack my box with five dozen liquor jugs. ", 40)
	body := func(extra string) string {
		b, _ := json.Marshal(map[string]any{"model": "demo", "prompt": prefix + extra, "max_tokens": 2})
		return string(b)
	}
	// Serve the prefix once, asking which worker served it.
	r := s.post(t, "/v1/completions", strings.TrimSuffix(body("a"), "}")+`,"nvext":{"extra_fields":["worker_id"]}}`)
	var resp struct {
		NvExt struct {
			WorkerID struct {
				DecodeWorkerID uint64 `json:"decode_worker_id"`
				OverlapBlocks  *int   `json:"overlap_blocks"`
				PromptBlocks   *int   `json:"prompt_blocks"`
			} `json:"worker_id"`
		} `json:"nvext"`
	}
	if err := json.Unmarshal(r.body, &resp); err != nil || r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	served := resp.NvExt.WorkerID.DecodeWorkerID
	if served != engines[0].id.Load() && served != engines[1].id.Load() {
		t.Fatalf("nvext.worker_id %x names neither worker (%x, %x)", served, engines[0].id.Load(), engines[1].id.Load())
	}
	if resp.NvExt.WorkerID.OverlapBlocks == nil || *resp.NvExt.WorkerID.OverlapBlocks != 0 || *resp.NvExt.WorkerID.PromptBlocks == 0 {
		t.Errorf("first request: %s", r.body)
	}
	calls := engines[0].calls.Load() + engines[1].calls.Load()

	// Ask where a prefix-sharing request would go: the same worker, most
	// of the prompt cached, and nothing generated.
	q := s.post(t, "/v1/completions", strings.TrimSuffix(body("b"), "}")+`,"stream":true,"nvext":{"annotations":["query_instance_id"]}}`)
	if q.status != 200 || !strings.Contains(string(q.body), "event: worker_instance_id\n") || !strings.Contains(string(q.body), "event: token_data\n") {
		t.Fatalf("query: %d %s", q.status, q.body)
	}
	var info struct {
		DecodeWorkerID uint64 `json:"decode_worker_id"`
		OverlapBlocks  int    `json:"overlap_blocks"`
		PromptBlocks   int    `json:"prompt_blocks"`
	}
	for _, line := range strings.Split(string(q.body), "\n\n") {
		if d, ok := strings.CutPrefix(line, "event: worker_instance_id\ndata: "); ok {
			_ = json.Unmarshal([]byte(d), &info)
		}
	}
	if info.DecodeWorkerID != served || info.OverlapBlocks == 0 || info.OverlapBlocks > info.PromptBlocks {
		t.Errorf("query answer %+v, want worker %x with the shared prefix cached", info, served)
	}
	if now := engines[0].calls.Load() + engines[1].calls.Load(); now != calls {
		t.Errorf("a routing query generated: worker calls %d -> %d", calls, now)
	}
}
