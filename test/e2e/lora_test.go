package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// loraAdapterDir makes a directory the mocker loads an adapter from (it
// asks for an adapter_config.json, as vLLM does).
func loraAdapterDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "adapter_config.json"), []byte(`{"r": 8, "lora_alpha": 16}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// loraAnswer is a completion's text, its worker and its cached prompt
// tokens.
type loraAnswer struct {
	text   string
	worker uint64
	cached int
}

// complete sends a unary completion for model and reads the answer.
func (f *frontend) complete(t testing.TB, model, prompt string) (int, loraAnswer, []byte) {
	t.Helper()
	resp, body := f.post(t, complPath, object{"model": model, "prompt": prompt, "max_tokens": 6,
		"nvext": object{"extra_fields": []string{"worker_id"}}})
	var c struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
		Usage *struct {
			Details *struct {
				Cached int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
		NvExt struct {
			WorkerID *struct {
				Decode uint64 `json:"decode_worker_id"`
			} `json:"worker_id"`
		} `json:"nvext"`
	}
	var a loraAnswer
	if resp.StatusCode == http.StatusOK && json.Unmarshal(body, &c) == nil && len(c.Choices) == 1 && c.NvExt.WorkerID != nil {
		a = loraAnswer{text: c.Choices[0].Text, worker: c.NvExt.WorkerID.Decode}
		if c.Usage != nil && c.Usage.Details != nil {
			a.cached = c.Usage.Details.Cached
		}
	}
	return resp.StatusCode, a, body
}

// TestLoraAdapters runs two frontends (KV routing, one NATS) in front of
// three mocker workers: POST /v1/loras loads an adapter on one of them;
// both frontends list it as a model with its parent; every request for it
// lands on that worker and answers differently from the base model, whose
// requests still spread; a second adapter on the same worker never reuses
// the first one's cached prefix; DELETE unloads it (404 after); and a
// SIGKILLed worker's adapter leaves /v1/models with its lease.
func TestLoraAdapters(t *testing.T) {
	c := newCluster(t, "etcd", "nats")
	env := []string{"ETCD_LEASE_TTL=2"}
	args := []string{"--router-mode", "kv"}
	fronts := []*frontend{c.startFrontendArgs(args), c.startFrontendArgs(args)}
	f := fronts[0]
	workers := c.startMockersByID(t, fronts, []string{"mocker-a", "mocker-b", "mocker-c"}, deterministic, env...)
	f.waitModels(t, "demo")

	resp, body := f.post(t, "/v1/loras", object{"lora_name": "sql-expert", "source": "file://" + loraAdapterDir(t), "replicas": 1})
	var loaded struct {
		Instances []uint64 `json:"instances"`
		BaseModel string   `json:"base_model"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &loaded) != nil || len(loaded.Instances) != 1 || loaded.BaseModel != "demo" {
		t.Fatalf("POST /v1/loras: %d %s; want one worker of demo", resp.StatusCode, body)
	}
	holder := loaded.Instances[0]
	for i, fr := range fronts {
		fr.waitModels(t, "demo", "sql-expert")
		_, b := fr.get(t, "/v1/models")
		if !strings.Contains(string(b), `"id":"sql-expert"`) || !strings.Contains(string(b), `"parent":"demo"`) {
			t.Errorf("frontend %d /v1/models: %s, want sql-expert with parent demo", i, b)
		}
	}

	t.Run("requests for the adapter go to its worker and answer as the adapter", func(t *testing.T) {
		_, base, _ := f.complete(t, "demo", "Tell me about SQL joins.")
		for i := range 6 {
			code, a, b := fronts[i%2].complete(t, "sql-expert", "Tell me about SQL joins.")
			if code != http.StatusOK || a.worker != holder {
				t.Fatalf("request %d: %d, worker %x, want %x: %s", i, code, a.worker, holder, b)
			}
			if a.text == base.text {
				t.Fatalf("the adapter answered %q, as the base model did", a.text)
			}
		}
		seen := map[uint64]bool{}
		for i := range 6 {
			_, a, _ := f.complete(t, "demo", "Base model request "+strings.Repeat("x", i))
			seen[a.worker] = true
		}
		if len(seen) < 2 {
			t.Errorf("base-model requests went to %v only, want them spread", seen)
		}
	})

	t.Run("two adapters never share a cached prefix", func(t *testing.T) {
		resp, body := f.post(t, "/v1/loras", object{"lora_name": "legal", "source": loraAdapterDir(t), "base_model": "demo", "replicas": 1})
		var legal struct {
			Instances []uint64 `json:"instances"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &legal) != nil || len(legal.Instances) != 1 {
			t.Fatalf("POST legal: %d %s", resp.StatusCode, body)
		}
		prompt := "A long shared prompt that fills several KV blocks: " + strings.Repeat("the quick brown fox jumps over the lazy dog ", 8)
		f.complete(t, "sql-expert", prompt)
		_, again, _ := f.complete(t, "sql-expert", prompt)
		if again.cached == 0 {
			t.Fatalf("the same adapter's second request had no cached tokens")
		}
		_, other, b := f.complete(t, "legal", prompt)
		if other.worker != holder || other.cached != 0 {
			t.Fatalf("adapter legal on worker %x had %d cached tokens of sql-expert's prompt, want worker %x and 0: %s", other.worker, other.cached, holder, b)
		}
	})

	t.Run("unloaded, the adapter is a 404", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodDelete, f.url+"/v1/loras/sql-expert", nil)
		r, err := f.http.Do(req)
		if err != nil || r.StatusCode != http.StatusOK {
			t.Fatalf("DELETE: %v %v", r, err)
		}
		r.Body.Close()
		waitFor(t, 10*time.Second, "sql-expert gone from /v1/models", func() bool { return !slices.Contains(f.modelIDs(t), "sql-expert") }, f.process)
		if code, _, b := f.complete(t, "sql-expert", "hi"); code != http.StatusNotFound {
			t.Fatalf("a request for the unloaded adapter: %d %s, want 404", code, b)
		}
	})

	t.Run("a killed worker's adapters leave with its lease", func(t *testing.T) {
		workers[holder].kill() // it holds legal: a second adapter goes where the first is (the base model's first worker)
		for i, fr := range fronts {
			waitFor(t, 20*time.Second, "legal gone from /v1/models", func() bool { return !slices.Contains(fr.modelIDs(t), "legal") }, fr.process)
			if code, _, b := fr.complete(t, "legal", "hi"); code != http.StatusNotFound {
				t.Errorf("frontend %d: a request for the dead worker's adapter: %d %s, want 404", i, code, b)
			}
		}
	})
}

// TestLoraLoadedOnDemand: an adapter registered with replicas 1 whose
// worker is SIGKILLed is loaded again, on the other worker, by the next
// request for it, through either frontend (both follow the
// registration); DELETE forgets it, and a request is then a 404.
func TestLoraLoadedOnDemand(t *testing.T) {
	c := newCluster(t, "etcd", "tcp")
	env := []string{"ETCD_LEASE_TTL=2"}
	fronts := []*frontend{c.startFrontend(), c.startFrontend()}
	f := fronts[0]
	workers := c.startMockersByID(t, fronts, []string{"mocker-a", "mocker-b"}, deterministic, env...)
	f.waitModels(t, "demo")
	resp, body := f.post(t, "/v1/loras", object{"lora_name": "sql-expert", "source": loraAdapterDir(t), "replicas": 1})
	var loaded struct {
		Instances []uint64 `json:"instances"`
		Replicas  int      `json:"replicas"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &loaded) != nil || len(loaded.Instances) != 1 || loaded.Replicas != 1 {
		t.Fatalf("POST /v1/loras: %d %s; want one worker, registered with replicas 1", resp.StatusCode, body)
	}
	first := loaded.Instances[0]
	waitFor(t, 10*time.Second, "the registration on the second frontend", func() bool {
		_, b := fronts[1].get(t, "/v1/loras")
		return strings.Contains(string(b), `"replicas":1`)
	}, fronts[1].process)

	workers[first].kill()
	for _, fr := range fronts {
		waitFor(t, 20*time.Second, "sql-expert gone with its worker's lease", func() bool { return !slices.Contains(fr.modelIDs(t), "sql-expert") }, fr.process)
	}
	code, a, b := fronts[1].complete(t, "sql-expert", "Tell me about SQL joins.")
	if code != http.StatusOK || a.worker == first || workers[a.worker] == nil {
		t.Fatalf("a request for the registered adapter after its worker died: %d, worker %x (the dead one %x): %s; want it loaded on the other worker and served", code, a.worker, first, b)
	}
	if !slices.Contains(f.modelIDs(t), "sql-expert") {
		waitFor(t, 10*time.Second, "the first frontend to see the adapter again", func() bool { return slices.Contains(f.modelIDs(t), "sql-expert") }, f.process)
	}

	req, _ := http.NewRequest(http.MethodDelete, f.url+"/v1/loras/sql-expert", nil)
	r, err := f.http.Do(req)
	if err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %v %v", r, err)
	}
	r.Body.Close()
	for i, fr := range fronts {
		waitFor(t, 10*time.Second, "sql-expert unloaded and unregistered", func() bool {
			_, b := fr.get(t, "/v1/loras")
			return !slices.Contains(fr.modelIDs(t), "sql-expert") && !strings.Contains(string(b), "sql-expert")
		}, fr.process)
		if code, _, b := fr.complete(t, "sql-expert", "hi"); code != http.StatusNotFound {
			t.Errorf("frontend %d: a request for the deleted adapter: %d %s, want 404", i, code, b)
		}
	}
}

// TestLoraRoutesWhereTheAdapterIsActive: two workers with --max-loras 1
// hold adapter a; loading b on the first swaps a out of its engine; the
// frontend learns it, and every request for a then goes to the second
// worker, where a is active, with no swap on the first.
func TestLoraRoutesWhereTheAdapterIsActive(t *testing.T) {
	c := newCluster(t, "etcd", "tcp")
	f := c.startFrontend()
	workers := c.startMockersByID(t, []*frontend{f}, []string{"mocker-a", "mocker-b"}, append([]string{"--max-loras", "1"}, deterministic...))
	f.waitModels(t, "demo")
	load := func(name string, replicas int) []uint64 {
		t.Helper()
		resp, body := f.post(t, "/v1/loras", object{"lora_name": name, "source": loraAdapterDir(t), "replicas": replicas})
		var o struct {
			Instances []uint64 `json:"instances"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &o) != nil {
			t.Fatalf("POST %s: %d %s", name, resp.StatusCode, body)
		}
		return o.Instances
	}
	if on := load("a", 0); len(on) != 2 {
		t.Fatalf("a loaded on %v, want both workers", on)
	}
	first := load("b", 1)[0] // swaps a out there
	var second uint64
	for id := range workers {
		if id != first {
			second = id
		}
	}
	activeOn := func() string {
		_, b := f.get(t, "/v1/loras")
		var list struct {
			Data []struct {
				Name     string   `json:"lora_name"`
				ActiveOn []uint64 `json:"active_on"`
			} `json:"data"`
		}
		_ = json.Unmarshal(b, &list)
		for _, a := range list.Data {
			if a.Name == "a" {
				return fmt.Sprint(a.ActiveOn)
			}
		}
		return ""
	}
	waitFor(t, 10*time.Second, "a active on the second worker only", func() bool { return activeOn() == fmt.Sprint([]uint64{second}) }, f.process)
	swaps := func() float64 {
		v, _ := workers[first].scrape(t).value("dynamo_worker_lora_swaps_total")
		return v
	}
	before := swaps()
	if before < 1 {
		t.Fatalf("dynamo_worker_lora_swaps_total %v on the first worker, want the swap b's load made", before)
	}
	for i := range 6 {
		if code, ans, b := f.complete(t, "a", fmt.Sprintf("Question %d", i)); code != http.StatusOK || ans.worker != second {
			t.Fatalf("request %d for a: %d on %x, want %x where a is active: %s", i, code, ans.worker, second, b)
		}
	}
	if after := swaps(); after != before {
		t.Errorf("the first worker swapped %v times for requests it should not have had", after-before)
	}
}
