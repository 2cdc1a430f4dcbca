package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/internal/testgguf"
)

// TestLlamaCppEngineKilled serves the demo GGUF from two llama-servers,
// each behind its worker (--migration-limit 2), round-robin on NATS:
// SIGKILL of the engine serving a greedy stream; the answer completes on
// the other engine and equals the undisturbed one; the dead engine's
// worker turns notready; the engine comes back and its worker serves
// again.
func TestLlamaCppEngineKilled(t *testing.T) {
	gguf := demoGGUF(t)
	engines := []*testenv.LlamaServer{startLlama(t, gguf), startLlama(t, gguf)}
	c := newCluster(t, "etcd", "nats")
	var workers []*worker
	for i, e := range engines {
		workers = append(workers, c.startLlamaWorker(fmt.Sprintf("worker-%d", i+1), e, "--migration-limit", "2"))
	}
	f := c.startFrontendArgs([]string{"--router-mode", "round-robin"})
	f.waitModels(t, "demo")
	for _, w := range workers {
		w.waitServing(t, addrTimeout)
	}

	const n = 2000
	req := object{"model": "demo", "temperature": 0, "max_tokens": n, "stream_options": object{"include_usage": true},
		"messages": []object{{"role": "user", "content": "Keep talking, llama."}}}
	want := f.stream(t, chatPath, req)
	if want.usage == nil || want.usage.CompletionTokens == 0 {
		t.Fatalf("undisturbed answer: usage %+v", want.usage)
	}

	before := f.migrations(t)
	live := f.startStream(t, chatPath, withStream(req))
	live.waitContent(t, 20)
	victim := -1
	for i, e := range engines {
		if slotsProcessing(t, e) == 1 {
			victim = i
		}
	}
	if victim < 0 {
		t.Fatal("no engine is processing the stream")
	}
	engines[victim].Kill()
	got := reassemble(t, chatPath, live.finish(t, 60*time.Second))
	if got.text != want.text || got.usage == nil || got.usage.CompletionTokens != want.usage.CompletionTokens {
		t.Errorf("after the engine's SIGKILL: %d tokens %q...; undisturbed: %d tokens %q...",
			tokensOf(got), prefix(got.text, 60), tokensOf(want), prefix(want.text, 60))
	}
	checkOneMigration(t, f, before, 20, n)

	dead := workers[victim]
	dead.waitHealth(t, 10*time.Second, "notready")
	if err := engines[victim].Start(); err != nil {
		t.Fatal(err)
	}
	dead.waitHealth(t, 30*time.Second, "ready")
	served := dead.generated(t)
	dead.waitFor(t, 30*time.Second, dead.name+" to serve again", func() bool {
		f.unary(t, chatPath, object{"model": "demo", "max_tokens": 2, "messages": []object{{"role": "user", "content": "again"}}})
		return dead.generated(t) > served
	})
}

// TestLlamaCppKVRouting serves the demo GGUF from two llama-servers
// behind a KV-routing frontend in approximate mode (llama.cpp publishes
// no KV events): requests that share a long prefix land on one engine,
// which reports the prefix served from its prompt cache.
func TestLlamaCppKVRouting(t *testing.T) {
	gguf := demoGGUF(t)
	engines := []*testenv.LlamaServer{startLlama(t, gguf), startLlama(t, gguf)}
	c := newCluster(t, "file", "tcp")
	var workers []*worker
	for i, e := range engines {
		workers = append(workers, c.startLlamaWorker(fmt.Sprintf("worker-%d", i+1), e, "--kv-block-size", "16"))
	}
	f := c.startFrontendArgs([]string{"--router-mode", "kv", "--no-kv-events", "--kv-cache-block-size", "16"})
	f.waitModels(t, "demo")
	for _, w := range workers {
		w.waitServing(t, addrTimeout)
	}
	if mode := f.health(t).KVRouting["demo"]; !strings.HasPrefix(mode, "approximate") {
		t.Errorf(`/health kv_routing["demo"] = %q, want approximate`, mode)
	}
	shared := words("llama prefix", 600)
	var first *worker
	for i := range 4 {
		before := map[*worker]float64{}
		for _, w := range workers {
			before[w] = w.generated(t)
		}
		resp, body := f.post(t, "/v1/completions", object{"model": "demo", "max_tokens": 2, "temperature": 0,
			"prompt": shared + " " + words(fmt.Sprintf("question %d", i), 12)})
		var u struct {
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
				Details      *struct {
					Cached int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		if resp.StatusCode != 200 || json.Unmarshal(body, &u) != nil {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
		var served *worker
		for _, w := range workers {
			if w.generated(t) > before[w] {
				served = w
			}
		}
		if served == nil {
			t.Fatalf("request %d: no worker counted it", i)
		}
		if i == 0 {
			first = served
			continue
		}
		if served != first {
			t.Errorf("request %d went to %s, the prefix is on %s", i, served.name, first.name)
		}
		if d := u.Usage.Details; d == nil || d.Cached < u.Usage.PromptTokens*3/4 {
			t.Errorf("request %d: usage %s, want most of its %d prompt tokens from the engine's cache", i, body, u.Usage.PromptTokens)
		}
	}
}

// TestLlamaCppVocabularyCheck: the command line of docs/engines.md
// (llama-server -m qwen3-0.6b-q8_0.gguf beside worker --model-path of
// Qwen3's files) starts and serves under the worker's name; a worker
// with the demo model's files in front of a GGUF whose vocabulary
// differs exits 1 and says which ids differ; and a worker whose engine
// dies while it loads exits 1 at its start timeout, saying why.
func TestLlamaCppVocabularyCheck(t *testing.T) {
	c := newCluster(t, "file", "tcp")
	t.Run("the documented command line: another file name, the same vocabulary", func(t *testing.T) {
		qwen3, err := filepath.Abs("../../../shared/testdata/models/qwen3")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(qwen3, "tokenizer.json")); err != nil {
			t.Skipf("Qwen3's tokenizer is not here (%v): ../shared/testdata/models/qwen3", err)
		}
		opts, err := testgguf.FromDir(qwen3)
		if err != nil {
			t.Fatal(err)
		}
		gguf := filepath.Join(t.TempDir(), "qwen3-0.6b-q8_0.gguf")
		if err := testgguf.Write(gguf, opts); err != nil {
			t.Fatal(err)
		}
		e := startLlama(t, gguf)
		w := c.startLlamaWorker("worker-qwen3", e, "--model-path", qwen3, "--endpoint", "dyn://dynamo.qwen3.generate")
		f := c.startFrontend()
		f.waitModels(t, "qwen3")
		u := f.unary(t, chatPath, object{"model": "qwen3", "max_tokens": 8, "temperature": 0,
			"messages": []object{{"role": "user", "content": "Hello!"}}})
		if u.Usage == nil || u.Usage.CompletionTokens != 8 || u.text() == "" {
			t.Errorf("answer %+v: want 8 tokens of text", u)
		}
		if !strings.Contains(w.log.String(), "its vocabulary agrees with the model's tokenizer") {
			w.fatalf(t, "the worker does not say that the names differ and the vocabularies agree")
		}
		f.killed, w.killed = true, true // stopped on purpose, before the next subtests
		f.stop(5 * time.Second)
		w.stop(5 * time.Second)
	})
	t.Run("another vocabulary", func(t *testing.T) {
		other := otherVocabGGUF(t)
		e := startLlama(t, other)
		w := c.startLlamaWorker("worker", e)
		select {
		case <-w.done:
		case <-time.After(addrTimeout):
			w.fatalf(t, "the worker still runs in front of another vocabulary")
		}
		w.killed = true // it exits on its own, as it should
		if code := w.cmd.ProcessState.ExitCode(); code != 1 {
			w.fatalf(t, "exit code %d, want 1", code)
		}
		if !regexp.MustCompile(`vocabulary mismatch: .*from token \d+, engine \[[0-9 ]+\], tokenizer \[[0-9 ]+\]`).MatchString(w.log.String()) {
			w.fatalf(t, "the worker's log does not show the differing ids")
		}
	})
	t.Run("an engine that dies while it loads", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "truncated.gguf")
		full, err := os.ReadFile(demoGGUF(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bad, full[:len(full)/2], 0o644); err != nil {
			t.Fatal(err)
		}
		// An engine restarted on its port with a broken file: it exits
		// while it loads, before it listens.
		gone := startLlama(t, demoGGUF(t))
		url := gone.URL()
		gone.Kill()
		port, err := strconv.Atoi(url[strings.LastIndexByte(url, ':')+1:])
		if err != nil {
			t.Fatal(err)
		}
		e := testenv.NewLlamaServer(t, testenv.NeedLlamaServer(t), testenv.LlamaOptions{Model: bad, Port: port, Args: llamaArgs})
		if err := e.Start(); err == nil {
			t.Fatal("llama-server loaded a truncated GGUF")
		}
		w := &worker{process: startProcess(t, "worker", workerBin, nil, append(slices.Clone(c.env), "DYN_SYSTEM_PORT=0"),
			append([]string{"--engine", "llamacpp", "--engine-url", url, "--engine-start-timeout", "2s", "--model-path", demoModel}, c.args...)...)}
		select {
		case <-w.done:
		case <-time.After(addrTimeout):
			w.fatalf(t, "the worker still waits for a dead engine")
		}
		w.killed = true // it exits on its own, as it should
		if code := w.cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(w.log.String(), "did not become ready within 2s") ||
			!strings.Contains(w.log.String(), "connection refused") {
			w.fatalf(t, "exit code %d; want 1, the engine not ready and why: %s", code, w.log.String())
		}
	})
}

// otherVocabGGUF writes the demo GGUF with two of its tokens' ids
// swapped: the same names, another vocabulary.
func otherVocabGGUF(t testing.TB) string {
	t.Helper()
	opts, err := testgguf.FromDir(demoModel)
	if err != nil {
		t.Fatal(err)
	}
	var tj map[string]any
	if err := json.Unmarshal(opts.TokenizerJSON, &tj); err != nil {
		t.Fatal(err)
	}
	vocab := tj["model"].(map[string]any)["vocab"].(map[string]any)
	vocab["e"], vocab["t"] = vocab["t"], vocab["e"]
	if opts.TokenizerJSON, err = json.Marshal(tj); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "other.gguf")
	if err := testgguf.Write(path, opts); err != nil {
		t.Fatal(err)
	}
	return path
}

func withStream(req object) object {
	r := object{"stream": true}
	for k, v := range req {
		r[k] = v
	}
	return r
}

func tokensOf(s streamed) int {
	if s.usage == nil {
		return -1
	}
	return s.usage.CompletionTokens
}

func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
