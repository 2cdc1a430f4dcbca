package preprocessor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/modelcard"
)

// sharedDir is the shared test data folder, outside the repository.
const sharedDir = "../../../shared/testdata"

// frozen is the clock the reference renders assume (strftime_now).
var frozen = time.Date(2025, 7, 10, 12, 0, 0, 0, time.UTC)

func needShared(t testing.TB, sub string) string {
	t.Helper()
	dir := filepath.Join(sharedDir, sub)
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("shared test data %s is absent (%v): these parity tests need the ../shared folder next to the repository", dir, err)
	}
	return dir
}

// loadModel builds a Model from a model directory.
func loadModel(t testing.TB, dir string, opts modelcard.Options) *Model {
	t.Helper()
	card, err := modelcard.FromDir(dir, opts)
	if err != nil {
		t.Fatalf("card for %s: %v", dir, err)
	}
	// The frontend gets the card the way a worker publishes it, and its
	// files by checksum.
	b, err := card.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, f := range card.Files() {
		files[f.Checksum] = f.Bytes()
	}
	if card, err = modelcard.Unmarshal(b); err != nil {
		t.Fatal(err)
	}
	if err := card.Load(context.Background(), func(_ context.Context, f *modelcard.File) ([]byte, error) { return files[f.Checksum], nil }); err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(card, Options{Now: func() time.Time { return frozen }, Clock: func() time.Time { return frozen }})
	if err != nil {
		t.Fatalf("model %s: %v", dir, err)
	}
	return m
}

// demoModel is the repository's own demo model (ChatML template, own BPE).
func demoModel(t testing.TB) *Model {
	t.Helper()
	return loadModel(t, "../../models/demo", modelcard.Options{Name: "demo"})
}

// withFiles returns a temporary copy of a model directory with extra files.
func withFiles(t testing.TB, dir string, files map[string]string) string {
	t.Helper()
	tmp := copyDir(t, dir)
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(tmp, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return tmp
}

func copyDir(t testing.TB, dir string) string {
	t.Helper()
	tmp := t.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return tmp
}

// withDemoTokenizer returns a temporary copy of a model directory with the
// demo tokenizer.json in place of the model's own: rendering does not use
// the tokenizer, and loading 15 real vocabularies would dominate the test.
func withDemoTokenizer(t testing.TB, dir string) string {
	t.Helper()
	tmp := copyDir(t, dir)
	b, err := os.ReadFile("../../models/demo/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "tokenizer.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	// Without the model's own vocabulary, the tokenizer class's BOS/EOS
	// rebuild cannot apply; drop the class (not a template variable).
	cfgPath := filepath.Join(tmp, "tokenizer_config.json")
	if b, err := os.ReadFile(cfgPath); err == nil {
		var cfg map[string]json.RawMessage
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		delete(cfg, "tokenizer_class")
		b, _ = json.Marshal(cfg)
		if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return tmp
}
