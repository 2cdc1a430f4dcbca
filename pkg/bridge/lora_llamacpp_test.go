package bridge_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/internal/testgguf"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/bridge"
)

// llamaComplete asks llama-server's own /completion for n greedy tokens
// after prompt, with lora as the request's lora field (nil: none).
func llamaComplete(t *testing.T, url string, prompt []uint32, n int, lora any) []uint32 {
	t.Helper()
	body := map[string]any{"prompt": prompt, "n_predict": n, "temperature": 0, "ignore_eos": true, "return_tokens": true, "cache_prompt": false}
	if lora != nil {
		body["lora"] = lora
	}
	b, _ := json.Marshal(body)
	resp, err := http.Post(url+"/completion", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Tokens []uint32 `json:"tokens"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/completion: %d, %v", resp.StatusCode, err)
	}
	return out.Tokens
}

// Against a real llama-server started with --lora and a LoRA adapter
// GGUF the test writes for the demo model: through the bridge, a request
// for the adapter answers otherwise than the base model, the adapter's
// answer is llama-server's own with the adapter at scale 1, and the base
// model's is its own with the adapter at scale 0, whether or not the
// server was started with --lora-init-without-apply (either way it
// applies the adapter to a request without a lora field).
func TestLoraLlamaCppServer(t *testing.T) {
	bin := testenv.NeedLlamaServer(t)
	opts, err := testgguf.FromDir(demoDir)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	model, adapter := filepath.Join(dir, "demo.gguf"), filepath.Join(dir, "demo-lora.gguf")
	if err := testgguf.Write(model, opts); err != nil {
		t.Fatal(err)
	}
	if err := testgguf.WriteLora(adapter, opts, testgguf.LoraOptions{Seed: 7, Targets: []string{"output.weight", "blk.1.ffn_down.weight"}}); err != nil {
		t.Fatal(err)
	}
	_, tok := demoVocabulary(t)
	prompt, err := tok.Encode("Once upon a time, in a land far away,", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, flags := range [][]string{{"--lora", adapter}, {"--lora", adapter, "--lora-init-without-apply"}} {
		t.Run(strings.Join(append([]string{flags[0]}, flags[2:]...), " "), func(t *testing.T) {
			srv := testenv.StartLlamaServer(t, bin, testenv.LlamaOptions{Model: model,
				Args: append([]string{"-c", "4096", "--parallel", "2", "--threads", "1", "--no-warmup"}, flags...)})
			checkLlamaLora(t, srv.URL(), adapter, prompt)
		})
	}
}

// checkLlamaLora loads adapter through the bridge and compares its
// answers and the base model's with llama-server's own.
func checkLlamaLora(t *testing.T, url, adapter string, prompt []uint32) {
	e, _, err := startBridge(t, bridge.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.LoadLora(t.Context(), "demo-tuned", adapter); err != nil {
		t.Fatal(err)
	}
	if err := e.LoadLora(t.Context(), "other", filepath.Join(t.TempDir(), "other.gguf")); !errors.Is(err, bridge.ErrLoraUnavailable) {
		t.Errorf("an adapter llama-server was not started with: %v, want ErrLoraUnavailable", err)
	}
	const n = 12
	gen := func(name string) []uint32 {
		t.Helper()
		req := &backend.Request{TokenIDs: prompt,
			StopConditions:  backend.StopConditions{MaxTokens: backend.Ptr[uint32](n), IgnoreEOS: backend.Ptr(true)},
			SamplingOptions: backend.SamplingOptions{Temperature: backend.Ptr(0.0)}}
		if name != "" {
			req.Routing = &backend.Routing{LoraName: backend.Ptr(name)}
		}
		outs, err := collect(t, e, t.Context(), req)
		if err != nil {
			t.Fatalf("generate %q: %v", name, err)
		}
		return ids(outs)
	}
	base, tuned := gen(""), gen("demo-tuned")
	if len(base) != n || len(tuned) != n {
		t.Fatalf("%d and %d tokens, want %d each", len(base), len(tuned), n)
	}
	t.Logf("base %v\nwith the adapter %v", base, tuned)
	if slices.Equal(base, tuned) {
		t.Fatalf("the adapter's answer is the base model's: %v", base)
	}
	if own := llamaComplete(t, url, prompt, n, []map[string]any{{"id": 0, "scale": 1}}); !slices.Equal(tuned, own) {
		t.Errorf("the adapter's answer %v, llama-server's own with it at scale 1 %v", tuned, own)
	}
	if own := llamaComplete(t, url, prompt, n, []map[string]any{{"id": 0, "scale": 0}}); !slices.Equal(base, own) {
		t.Errorf("the base answer %v, llama-server's own with the adapter at scale 0 %v", base, own)
	}
	if own := llamaComplete(t, url, prompt, n, nil); !slices.Equal(tuned, own) {
		t.Errorf("without a lora field llama-server answers %v, not the adapter's %v: the bridge's reading of its global scales is stale", own, tuned)
	}
	// Again, after the adapter's: a slot's cached prompt does not leak
	// the adapter into the base model's answer.
	if again := gen(""); !slices.Equal(again, base) {
		t.Errorf("the base answer after the adapter's %v, want %v", again, base)
	}
}
