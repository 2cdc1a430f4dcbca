package tokenizer_test

// Long texts are encoded by several goroutines (parallel.go). These tests
// lower the thresholds (tokenizer.EncodeWith) so that short texts are cut
// at every possible place, and compare with the serial encoding and with
// the HF goldens.

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer"
)

// forced encodes text on 3 goroutines however short it is, in units of
// unit bytes (1: every segment and every possible cut is a unit of its
// own).
func forced(tok *tokenizer.Tokenizer, text string, add bool, unit int) ([]uint32, error) {
	return tokenizer.EncodeWith(tok, text, add, 3, 0, unit)
}

var sharedToks sync.Map // model name -> *tokenizer.Tokenizer

// sharedTokenizer loads a shared model once for the tests of this file; it
// skips the test when the model is absent.
func sharedTokenizer(t *testing.T, model string) *tokenizer.Tokenizer {
	t.Helper()
	if tok, ok := sharedToks.Load(model); ok {
		return tok.(*tokenizer.Tokenizer)
	}
	path := modelPath(requireModelsRoot(t), model)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s absent: skipping %s", path, model)
	}
	tok, err := tokenizer.FromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sharedToks.Store(model, tok)
	return tok
}

// TestEncodeParallelGoldens runs the parity goldens with the forced
// parallel encoding, for every shared model.
func TestEncodeParallelGoldens(t *testing.T) {
	requireModelsRoot(t)
	cf, _ := loadCases(t)
	units := []int{1, 64}
	if tokenizer.RaceEnabled {
		units = units[:1]
	}
	for _, model := range goldenModels(t) {
		t.Run(model, func(t *testing.T) {
			tok := sharedTokenizer(t, model)
			g := loadGolden(t, model)
			for i, gc := range g.Cases {
				if gc.Error != "" {
					continue
				}
				text := cf.Cases[i].Text
				wantSp := gc.IDs
				if gc.IDsSpecial != nil {
					wantSp = *gc.IDsSpecial
				}
				for _, unit := range units {
					got, err := forced(tok, text, false, unit)
					if err != nil || !equalIDs(got, gc.IDs) {
						t.Fatalf("%s (unit %d): forced parallel Encode: err %v\n%s", gc.Name, unit, err, describeIDDiff(tok, gc.IDs, got))
					}
					got, err = forced(tok, text, true, unit)
					if err != nil || !equalIDs(got, wantSp) {
						t.Fatalf("%s (unit %d): forced parallel Encode(addSpecialTokens): err %v\n%s", gc.Name, unit, err, describeIDDiff(tok, wantSp, got))
					}
				}
			}
		})
	}
}

// TestEncodeParallelCorpus compares serial and parallel encodings of the
// whole corpus (about 120 KB, above the real threshold) and of a chat
// built from it, for several unit sizes and worker counts.
func TestEncodeParallelCorpus(t *testing.T) {
	requireModelsRoot(t)
	text := corpusText(t)
	chat := chatText(text, 3000)
	par := []struct{ workers, unit int }{{2, 1}, {3, 4096}, {4, 7}, {2, 300}}
	if tokenizer.RaceEnabled {
		par = par[:2]
	}
	for _, model := range goldenModels(t) {
		t.Run(model, func(t *testing.T) {
			tok := sharedTokenizer(t, model)
			for _, s := range []string{text, chat} {
				want, err := tokenizer.EncodeSerial(tok, s, true)
				if err != nil {
					t.Fatal(err)
				}
				if got, err := tok.Encode(s, true); err != nil || !equalIDs(got, want) {
					t.Fatalf("Encode: err %v\n%s", err, describeIDDiff(tok, want, got))
				}
				for _, c := range par {
					got, err := tokenizer.EncodeWith(tok, s, true, c.workers, 0, c.unit)
					if err != nil || !equalIDs(got, want) {
						t.Fatalf("%d workers, unit %d: err %v\n%s", c.workers, c.unit, err, describeIDDiff(tok, want, got))
					}
				}
			}
		})
	}
}

// TestCutsAtSpacesPerFamily documents which shared tokenizers are cut
// inside segments (all are cut around raw added tokens).
func TestCutsAtSpacesPerFamily(t *testing.T) {
	requireModelsRoot(t)
	for model, want := range map[string]bool{
		"llama-3-8b-instruct":           true,  // Split (Llama-3 regex) + ByteLevel
		"qwen2.5-instruct":              true,  // NFC; Split (Qwen2 regex) + ByteLevel
		"qwen3":                         true,  // same
		"qwen2-1.5b-instruct-boundless": true,  // same
		"phi-2":                         true,  // ByteLevel (GPT-2 regex); normalized added tokens of spaces
		"whisper-tiny":                  true,  // ByteLevel; normalized added tokens without spaces
		"roberta-base":                  true,  // ByteLevel
		"falcon":                        true,  // Punctuation, ByteLevel, Digits, Split
		"bert-base-uncased":             true,  // BertNormalizer + BertPreTokenizer, WordPiece
		"t5-small":                      true,  // Precompiled; WhitespaceSplit + Metaspace, Unigram
		"nmt-unigram":                   false, // Strip and Replace(regex) normalizers
		"clip":                          false, // Replace(regex) normalizer
		"llama-2-hf-internal-testing":   false, // Prepend/Replace normalizers, no pre-tokenizer
		"phi-3-mini-instruct":           false, // same
		"chatglm":                       false, // Replace normalizers, Split on a literal
	} {
		t.Run(model, func(t *testing.T) {
			if got := tokenizer.CutsAtSpaces(sharedTokenizer(t, model)); got != want {
				t.Errorf("CutsAtSpaces = %v, want %v", got, want)
			}
		})
	}
}

// synthetic returns a tokenizer.json: a byte-fallback BPE over letters,
// "▁", "Ġ" and " " with a few merges (some across a space: cutting where
// the serial encoding does not shows), the given normalizer and
// pre-tokenizer, a raw special token "<|s|>" and the extra added tokens.
func synthetic(t *testing.T, normalizer, pretok, added string) *tokenizer.Tokenizer {
	t.Helper()
	var vocab []string
	for c := 0; c < 256; c++ {
		vocab = append(vocab, fmt.Sprintf(`"<0x%02X>":%d`, c, c))
	}
	next := 256
	tokens := []string{"▁", "Ġ", "th", "the", "▁t", "▁the", "in", "ing", "e▁", "eĠ", "e ", " ", "<|s|>", "<x>", "zz"}
	for c := 'a'; c <= 'z'; c++ {
		tokens = append(tokens, string(c))
	}
	for _, s := range tokens {
		vocab = append(vocab, fmt.Sprintf(`%q:%d`, s, next))
		next++
	}
	if added != "" {
		added = "," + added
	}
	doc := `{"version":"1.0","truncation":null,"padding":null,
 "added_tokens":[{"id":264,"content":"<|s|>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}` + added + `],
 "normalizer":` + normalizer + `,"pre_tokenizer":` + pretok + `,"post_processor":null,"decoder":null,
 "model":{"type":"BPE","byte_fallback":true,"unk_token":null,"vocab":{` + strings.Join(vocab, ",") + `},
  "merges":[["t","h"],["th","e"],["▁","t"],["▁","the"],["i","n"],["in","g"],["e","▁"],["e","Ġ"],["e"," "]]}}`
	tok, err := tokenizer.FromBytes([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestEncodeParallelSynthetic covers configurations the shared models do
// not have, cut or not.
func TestEncodeParallelSynthetic(t *testing.T) {
	const (
		lstripX  = `{"id":265,"content":"<x>","single_word":false,"lstrip":true,"rstrip":false,"normalized":true,"special":false}`
		rstripZ  = `{"id":266,"content":"zz","single_word":false,"lstrip":false,"rstrip":true,"normalized":true,"special":false}`
		wordZ    = `{"id":266,"content":" zz","single_word":true,"lstrip":false,"rstrip":false,"normalized":true,"special":false}`
		spacedZ  = `{"id":266,"content":"zz the","single_word":false,"lstrip":false,"rstrip":false,"normalized":true,"special":false}`
		first    = `{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":true}`
		firstNo  = `{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":false}`
		seqPunct = `{"type":"Sequence","pretokenizers":[{"type":"Punctuation","behavior":"Contiguous"},{"type":"Digits","individual_digits":true},{"type":"WhitespaceSplit"},{"type":"Metaspace","replacement":"▁","prepend_scheme":"first"}]}`
		nfkcLow  = `{"type":"Sequence","normalizers":[{"type":"NFKC"},{"type":"Lowercase"}]}`
	)
	text := corpusText(t)
	text = chatText(text[:len(text)/2], 2000) + strings.ReplaceAll(text[len(text)/2:], "the ", "the <x> zz the ")
	for _, c := range []struct {
		name, normalizer, pretok, added string
		cuts                            bool
	}{
		{"metaspace-first", "null", first, "", true},
		{"metaspace-first-nfkc-lowercase-lstrip", nfkcLow, first, lstripX, true},
		{"metaspace-first-no-split", "null", firstNo, "", false},
		{"sequence-punctuation-digits-whitespace-metaspace", "null", seqPunct, lstripX, true},
		{"bytelevel", `{"type":"NFC"}`, `{"type":"ByteLevel","add_prefix_space":true}`, lstripX, true},
		{"bytelevel-no-regex", "null", `{"type":"ByteLevel","add_prefix_space":true,"use_regex":false}`, "", false},
		{"rstrip-added-token", "null", first, rstripZ, false},
		{"single-word-added-token", "null", first, wordZ, false},
		{"added-token-with-letter-space", "null", first, spacedZ, false},
		{"prepend-normalizer", `{"type":"Prepend","prepend":"▁"}`, first, "", false},
		{"strip-normalizer", `{"type":"Strip","strip_left":true,"strip_right":true}`, first, "", false},
		{"no-pretokenizer", "null", "null", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tok := synthetic(t, c.normalizer, c.pretok, c.added)
			if got := tokenizer.CutsAtSpaces(tok); got != c.cuts {
				t.Fatalf("CutsAtSpaces = %v, want %v", got, c.cuts)
			}
			for _, s := range []string{text, "a b", "ab cd", "<|s|>ab cd<|s|>", "the <x> zz the", "  ab  cd ", "ab cd\n"} {
				want, err := tokenizer.EncodeSerial(tok, s, false)
				if err != nil {
					t.Fatal(err)
				}
				for _, unit := range []int{1, 5, 1000} {
					got, err := forced(tok, s, false, unit)
					if err != nil || !equalIDs(got, want) {
						t.Fatalf("%.40q, unit %d: err %v\n%s", s, unit, err, describeIDDiff(tok, want, got))
					}
				}
			}
		})
	}
}

// TestEncodeParallelError: the parallel encoding returns the error the
// serial one meets first.
func TestEncodeParallelError(t *testing.T) {
	tok, err := tokenizer.FromBytes([]byte(`{"added_tokens":[{"id":2,"content":"<t>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],
 "pre_tokenizer":{"type":"WhitespaceSplit"},
 "model":{"type":"BPE","vocab":{"a":0,"b":1,"c":3,"d":4},"merges":[],"unk_token":"[UNK]"}}`))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("ab cd<t>", 50) + "ab zz cd" + strings.Repeat("<t>ab cd yy", 50)
	_, want := tokenizer.EncodeSerial(tok, text, false)
	if want == nil {
		t.Fatal("serial encoding did not fail")
	}
	for _, unit := range []int{1, 10, 100} {
		if _, err := forced(tok, text, false, unit); err == nil || err.Error() != want.Error() || !errors.Is(err, errors.Unwrap(want)) {
			t.Errorf("unit %d: err %v, want %v", unit, err, want)
		}
	}
}

func TestSpaceCut(t *testing.T) {
	for _, c := range []struct {
		s    string
		from int
		want int
	}{
		{"ab cd", 0, 2},
		{"ab cd", 3, -1},
		{"a b", 0, -1},      // one letter before the space
		{"ab  cd ef", 0, 6}, // two spaces, then "cd ef"
		{"ab 1 cd ef", 0, 7},
		{"éa cd ab c", 0, 6}, // one ASCII letter before the first space
		{"ab\tcd ef", 0, 5},  // only ' '
		{"ab cd ef", 3, 5},
		{"ab c", 0, 2},
		{"ab ", 0, -1},
		{"", 0, -1},
		{"xy\u0301 ab cd", 0, 7},
	} {
		if got := tokenizer.SpaceCut(c.s, c.from); got != c.want {
			t.Errorf("spaceCut(%q, %d) = %d, want %d", c.s, c.from, got, c.want)
		}
	}
}

// FuzzEncodeParallel compares the forced parallel encoding with the serial
// one on the fuzz models (fuzz_test.go), on any text:
//
//	go test -run '^$' -fuzz FuzzEncodeParallel -fuzztime 60s ./pkg/preprocessor/tokenizer/
func FuzzEncodeParallel(f *testing.F) {
	if cf, _ := loadCases(f); cf != nil {
		for _, c := range cf.Cases {
			f.Add(c.Text, uint8(len(c.Text)))
		}
	}
	for _, s := range []string{"", "ab cd", "ab\xff cd", "<|im_start|>ab cd<|im_end|>ab", "<s>ab cd</s>", "[CLS]ab cd", "ab c\u0301d", "ab  cd"} {
		f.Add(s, uint8(1))
	}
	toks := loadFuzzTokenizers(f)
	f.Fuzz(func(t *testing.T, s string, unit uint8) {
		for _, ft := range toks {
			want, wantErr := tokenizer.EncodeSerial(ft.tok, s, true)
			got, err := forced(ft.tok, s, true, 1+int(unit%64))
			if (err == nil) != (wantErr == nil) || !slices.Equal(got, want) {
				t.Fatalf("%s: %q (unit %d): parallel %v (err %v), serial %v (err %v)", ft.name, s, 1+int(unit%64), got, err, want, wantErr)
			}
		}
	})
}
