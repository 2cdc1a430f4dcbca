package demomodel

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite models/demo from the generator")

// demoDir is models/demo relative to this package.
var demoDir = filepath.Join("..", "..", "..", "..", "models", "demo")

// TestFilesUpToDate checks that models/demo holds exactly what the
// generator produces; -update rewrites it.
func TestFilesUpToDate(t *testing.T) {
	files, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		path := filepath.Join(demoDir, name)
		if *update {
			if err := os.WriteFile(path, files[name], 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to generate)", err)
		}
		if !bytes.Equal(got, files[name]) {
			t.Errorf("%s differs from the generator's output; run go test ./pkg/modelcard/internal/demomodel -update", path)
		}
	}
}

// TestTokenizerShape checks the invariants a BPE tokenizer.json loader
// relies on: all 256 byte symbols present, every merge's parts and result
// in the vocabulary, ids dense, special tokens after the vocabulary.
func TestTokenizerShape(t *testing.T) {
	files, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	var tj struct {
		AddedTokens []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
			Special bool   `json:"special"`
		} `json:"added_tokens"`
		Model struct {
			Type   string         `json:"type"`
			Vocab  map[string]int `json:"vocab"`
			Merges []string       `json:"merges"`
		} `json:"model"`
	}
	if err := json.Unmarshal(files["tokenizer.json"], &tj); err != nil {
		t.Fatal(err)
	}
	if tj.Model.Type != "BPE" {
		t.Fatalf("model type %q", tj.Model.Type)
	}
	_, char := byteChars()
	for b := 0; b < 256; b++ {
		if _, ok := tj.Model.Vocab[string(char[byte(b)])]; !ok {
			t.Errorf("byte %#x (%q) missing from the vocabulary", b, char[byte(b)])
		}
	}
	seen := map[int]bool{}
	for tok, id := range tj.Model.Vocab {
		if seen[id] {
			t.Errorf("id %d used twice (%q)", id, tok)
		}
		seen[id] = true
	}
	for i, m := range tj.Model.Merges {
		a, b, ok := strings.Cut(m, " ")
		if !ok || strings.Contains(b, " ") {
			t.Fatalf("merge %d %q is not two symbols", i, m)
		}
		for _, s := range []string{a, b, a + b} {
			if _, ok := tj.Model.Vocab[s]; !ok {
				t.Errorf("merge %q: %q not in the vocabulary", m, s)
			}
		}
	}
	n := len(tj.Model.Vocab)
	for i, at := range tj.AddedTokens {
		if at.ID != n+i || !at.Special || at.Content != Specials[i] {
			t.Errorf("added token %d = %+v, want id %d %q special", i, at, n+i, Specials[i])
		}
	}
	if got := n + len(tj.AddedTokens); got != VocabSize {
		t.Errorf("vocab size %d, want %d", got, VocabSize)
	}
	if len(seen) != n || !seen[0] || !seen[n-1] {
		t.Errorf("vocabulary ids are not 0..%d", n-1)
	}
}
