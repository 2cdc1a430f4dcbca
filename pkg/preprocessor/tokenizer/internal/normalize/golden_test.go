package normalize

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// modelsDir holds the shared real tokenizer.json files (never copied here).
const modelsDir = "../../../../../../shared/testdata/models"

// modelSection returns the raw section of a model's tokenizer.json.
func modelSection(t *testing.T, model, section string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(modelsDir, model, "tokenizer.json"))
	if err != nil {
		t.Skipf("shared model %s not available (%v): skipping", model, err)
	}
	var d map[string]json.RawMessage
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d[section]
}

// TestHFGolden compares every normalizer with outputs produced by the Rust
// tokenizers library (testdata/hf_golden.json, see
// ../pretok/testdata/gen_hf_golden.js).
func TestHFGolden(t *testing.T) {
	b, err := os.ReadFile("testdata/hf_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Corpus []string
		Cases  []struct {
			Name   string
			Model  string
			Config json.RawMessage
			Out    []string
		}
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			cfg := c.Config
			if c.Model != "" {
				cfg = modelSection(t, c.Model, "normalizer")
			}
			n, err := FromJSON(cfg)
			if err != nil || n == nil {
				t.Fatalf("FromJSON: %v, %v", n, err)
			}
			bad := 0
			for i, in := range g.Corpus {
				if got := n.Normalize(in); got != c.Out[i] {
					bad++
					if bad <= 5 {
						t.Errorf("Normalize(%+q) = %+q, HF %+q", in, got, c.Out[i])
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d/%d mismatches", bad, len(g.Corpus))
			}
		})
	}
}
