package pretok

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
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

// TestHFGolden compares every pre-tokenizer with splits produced by the
// Rust tokenizers library (testdata/hf_golden.json from gen_hf_golden.js).
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
			Out    [][]string
		}
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			cfg := c.Config
			if c.Model != "" {
				cfg = modelSection(t, c.Model, "pre_tokenizer")
			}
			p, err := FromJSON(cfg)
			if err != nil || p == nil {
				t.Fatalf("FromJSON: %v, %v", p, err)
			}
			bad := 0
			for i, in := range g.Corpus {
				got := p.PreTokenize(nil, []string{in})
				want := c.Out[i]
				if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
					bad++
					if bad <= 5 {
						t.Errorf("PreTokenize(%+q)\n got %+q\nwant %+q", in, got, want)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d/%d mismatches", bad, len(g.Corpus))
			}
		})
	}
}
