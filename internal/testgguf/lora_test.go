package testgguf

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// WriteLora writes llama.cpp's adapter form: the adapter keys, and for
// each target of ggml shape [in, out] lora_a [in, r] and lora_b [r, out].
func TestWriteLora(t *testing.T) {
	opts := Options{TokenizerJSON: demoTokenizer(t, func(map[string]any) {})}
	path := filepath.Join(t.TempDir(), "lora.gguf")
	if err := WriteLora(path, opts, LoraOptions{Rank: 4, Targets: []string{"output.weight", "blk.0.attn_q.weight"}}); err != nil {
		t.Fatal(err)
	}
	g, err := readGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"general.architecture": "qwen3", "general.type": "adapter", "adapter.type": "lora", "adapter.lora.alpha": float32(4)} {
		if got := g.kv[k]; got != want {
			t.Errorf("%s = %v, want %v", k, got, want)
		}
	}
	var got []string
	for _, ts := range g.tensors {
		got = append(got, fmt.Sprintf("%s %v", ts.name, ts.dims))
	}
	nVocab := g.tensors[1].dims[1]
	want := []string{
		"output.weight.lora_a [64 4]", fmt.Sprintf("output.weight.lora_b [4 %d]", nVocab),
		"blk.0.attn_q.weight.lora_a [64 4]", "blk.0.attn_q.weight.lora_b [4 64]",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tensors (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"token_embd.weight", "output_norm.weight", "blk.9.attn_q.weight"} {
		if err := WriteLora(path, opts, LoraOptions{Targets: []string{bad}}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("target %s: %v, want an error naming it", bad, err)
		}
	}
}
