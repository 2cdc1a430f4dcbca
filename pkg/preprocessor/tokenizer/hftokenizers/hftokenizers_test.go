//go:build hftokenizers

package hftokenizers_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer/hftokenizers"
)

// coder is what both implementations offer.
type coder interface {
	Encode(text string, addSpecialTokens bool) ([]uint32, error)
	Decode(ids []uint32, skipSpecialTokens bool) (string, error)
	VocabSize() int
}

var (
	_ coder = (*tokenizer.Tokenizer)(nil)
	_ coder = (*hftokenizers.Tokenizer)(nil)
)

// The Rust library and the pure-Go tokenizer agree on the corpus, for every
// shared model.
func TestSameIdsAsPureGo(t *testing.T) {
	models := filepath.Join("..", "..", "..", "..", "..", "shared", "testdata", "models")
	dirs, err := os.ReadDir(models)
	if err != nil {
		t.Skipf("shared models not available: %v", err)
	}
	corpus, err := filepath.Glob(filepath.Join("..", "testdata", "corpus", "*.txt"))
	if err != nil || len(corpus) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, d := range dirs {
		path := filepath.Join(models, d.Name(), "tokenizer.json")
		if _, err := os.Stat(path); err != nil {
			continue
		}
		t.Run(d.Name(), func(t *testing.T) {
			ours, err := tokenizer.FromFile(path)
			if err != nil {
				t.Fatal(err)
			}
			rust, err := hftokenizers.FromFile(path)
			if err != nil {
				t.Fatal(err)
			}
			defer rust.Close()
			for _, f := range corpus {
				text, _ := os.ReadFile(f)
				for _, special := range []bool{false, true} {
					a, _ := ours.Encode(string(text), special)
					b, _ := rust.Encode(string(text), special)
					if !slices.Equal(a, b) {
						t.Errorf("%s (special=%v): ids differ", filepath.Base(f), special)
					}
				}
			}
		})
	}
}
