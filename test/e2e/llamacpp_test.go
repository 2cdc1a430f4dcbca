package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/internal/testgguf"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer"
)

// The tests in llamacpp*_test.go run llama.cpp's llama-server (built by
// scripts/llama-server.sh, skipped with the command that builds it when
// absent) on a random-weight GGUF of the demo model's vocabulary and
// chat template, which internal/testgguf writes in the test's temporary
// directory: a real engine's forward pass, sampling, prompt cache, slots
// and HTTP server behind cmd/worker --engine llamacpp.

// llamaArgs are every test engine's flags: a context of 4096 tokens per
// slot (the demo model's), two slots, one thread (the machine has two
// cores and runs several engines), the Prometheus /metrics and /slots.
var llamaArgs = []string{"-c", "8192", "--parallel", "2", "--threads", "1", "--metrics", "--slots", "--no-warmup"}

// demoGGUF writes the demo model's GGUF into a temporary directory.
func demoGGUF(t testing.TB) string {
	t.Helper()
	return demoGGUFAs(t, "demo.gguf")
}

// demoGGUFAs writes the demo model's GGUF into a temporary directory,
// under file name name.
func demoGGUFAs(t testing.TB, name string) string {
	t.Helper()
	opts, err := testgguf.FromDir(demoModel)
	if err != nil {
		t.Fatal(err)
	}
	opts.Name = "demo"
	path := filepath.Join(t.TempDir(), name)
	if err := testgguf.Write(path, opts); err != nil {
		t.Fatal(err)
	}
	return path
}

// startLlama starts llama-server on gguf.
func startLlama(t testing.TB, gguf string, extra ...string) *testenv.LlamaServer {
	t.Helper()
	bin := testenv.NeedLlamaServer(t)
	return testenv.StartLlamaServer(t, bin, testenv.LlamaOptions{Model: gguf, Args: append(slices.Clone(llamaArgs), extra...)})
}

// startLlamaWorker starts cmd/worker --engine llamacpp in front of e,
// with the demo model's files unless extra has a --model-path. Its engine's /health is probed every 200 ms.
func (c *cluster) startLlamaWorker(name string, e *testenv.LlamaServer, extra ...string) *worker {
	c.t.Helper()
	args := append(append([]string{"--engine", "llamacpp", "--engine-url", e.URL(), "--engine-start-timeout", "60s"}, c.args...), extra...)
	if !slices.Contains(extra, "--model-path") {
		args = append(args, "--model-path", demoModel)
	}
	env := append(slices.Clone(c.env), "DYN_SYSTEM_PORT=0", kvLeaseTTL, "DYN_HEALTH_CHECK_PROBE_INTERVAL=0.2")
	return &worker{process: startProcess(c.t, name, workerBin, statusListening, env, args...)}
}

// demoTokenizer is the demo model's tokenizer, which decodes the
// engine's token ids as the frontend does.
func demoTokenizer(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	cfg, err := os.ReadFile(filepath.Join(demoModel, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromFile(filepath.Join(demoModel, "tokenizer.json"), tokenizer.WithConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// engineAnswer is the engine's own answer to a token-id prompt.
type engineAnswer struct {
	Tokens   []uint32 `json:"tokens"`
	Content  string   `json:"content"`
	StopType string   `json:"stop_type"`
	Probs    []struct {
		ID          uint32  `json:"id"`
		Logprob     float64 `json:"logprob"`
		TopLogprobs []struct {
			ID      uint32  `json:"id"`
			Logprob float64 `json:"logprob"`
		} `json:"top_logprobs"`
	} `json:"completion_probabilities"`
}

// engineComplete asks the engine itself (POST /completion, unary) for
// n tokens after the prompt ids; body adds sampling fields (default
// greedy).
func engineComplete(t testing.TB, e *testenv.LlamaServer, ids []uint32, n int, body object) engineAnswer {
	t.Helper()
	req := object{"prompt": ids, "n_predict": n, "temperature": 0, "return_tokens": true, "cache_prompt": false}
	for k, v := range body {
		req[k] = v
	}
	b, _ := json.Marshal(req)
	resp, err := http.Post(e.URL()+"/completion", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("engine /completion: %d %s", resp.StatusCode, raw)
	}
	var a engineAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("engine /completion: %v: %s", err, raw)
	}
	return a
}

// promptIDs are the prompt token ids the frontend sends for req, from
// its token_ids annotation.
func (f *frontend) promptIDs(t testing.TB, path string, req object) []uint32 {
	t.Helper()
	r := object{}
	for k, v := range req {
		r[k] = v
	}
	r["stream"], r["max_tokens"] = true, 1
	r["nvext"] = object{"annotations": []string{"token_ids"}}
	resp, body := f.post(t, path, r)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, resp.StatusCode, body)
	}
	for _, ev := range parseSSE(t, body) {
		if ev.event != "token_ids" {
			continue
		}
		var ids []uint32
		if err := json.Unmarshal([]byte(ev.data), &ids); err != nil {
			t.Fatalf("token_ids annotation %q: not a list of ids: %v", ev.data, err)
		}
		return ids
	}
	t.Fatalf("POST %s: no token_ids annotation in %s", path, body)
	return nil
}

// slotsProcessing counts the engine's slots that are processing a
// request (GET /slots).
func slotsProcessing(t testing.TB, e *testenv.LlamaServer) int {
	t.Helper()
	resp, err := http.Get(e.URL() + "/slots")
	if err != nil {
		t.Fatalf("GET /slots: %v", err)
	}
	defer resp.Body.Close()
	var slots []struct {
		IsProcessing bool `json:"is_processing"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&slots); err != nil {
		t.Fatalf("GET /slots: %v", err)
	}
	n := 0
	for _, s := range slots {
		if s.IsProcessing {
			n++
		}
	}
	return n
}

// workerHealth is the worker's /health status code and status.
func (w *worker) health(t testing.TB) (int, string) {
	t.Helper()
	resp, err := w.http.Get("http://" + w.address(t) + "/health")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var h struct {
		Status string `json:"status"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&h)
	return resp.StatusCode, h.Status
}

// waitHealth waits until the worker's /health says status.
func (w *worker) waitHealth(t testing.TB, d time.Duration, status string) {
	t.Helper()
	w.waitFor(t, d, w.name+" /health "+status, func() bool {
		_, s := w.health(t)
		return s == status
	})
}

// generated counts the worker's generate requests.
func (w *worker) generated(t testing.TB) float64 {
	t.Helper()
	v, _ := w.scrape(t).value("dynamo_component_requests_total", `dynamo_endpoint="generate"`)
	return v
}

func tokenStrings(t testing.TB, tok *tokenizer.Tokenizer, ids []uint32) []string {
	t.Helper()
	out := make([]string, len(ids))
	for i, id := range ids {
		s, err := tok.Decode([]uint32{id}, false)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = s
	}
	return out
}
