package tokenizer_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer"
)

// resumeTexts builds conversation-like texts for tok: corpus snippets
// between the tokenizer's added tokens, as chat templates put them.
func resumeTexts(t *testing.T, tok *tokenizer.Tokenizer, rng *rand.Rand, n int) []string {
	t.Helper()
	cf, _ := loadCases(t)
	var added []string
	for _, a := range tok.AddedTokens() {
		added = append(added, a.Content)
	}
	if len(added) == 0 {
		return nil
	}
	// Pieces that test the edges of a cut: white space (rstrip, lstrip),
	// word characters (single_word), the first bytes of an added token.
	edges := []string{" ", "\n", "  \n", "a", "x y", "1", "é"}
	for _, a := range added {
		if len(a) > 1 {
			edges = append(edges, a[:len(a)/2], a[:len(a)-1])
		}
	}
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for range 2 + rng.IntN(12) {
			switch rng.IntN(4) {
			case 0:
				b.WriteString(added[rng.IntN(len(added))])
			case 1:
				b.WriteString(edges[rng.IntN(len(edges))])
			default:
				c := cf.Cases[rng.IntN(len(cf.Cases))].Text
				lo := rng.IntN(len(c) + 1)
				b.WriteString(c[lo:min(len(c), lo+rng.IntN(200))])
			}
		}
		out[i] = b.String()
	}
	return out
}

// Every shared model: the ids of a text resumed at any cut of an earlier
// text it begins with (as far as the cut) are the ids of the text encoded
// whole, and so are its cuts; EncodeCuts gives Encode's ids.
func TestResumeEqualsEncodingWhole(t *testing.T) {
	requireModelsRoot(t)
	for _, model := range goldenModels(t) {
		t.Run(model, func(t *testing.T) {
			tok := sharedTokenizer(t, model)
			rng := rand.New(rand.NewPCG(1, 2))
			texts := resumeTexts(t, tok, rng, 60)
			if texts == nil {
				t.Skip("no added tokens: no cuts")
			}
			resumed, refused, found := 0, 0, 0
			for i, a := range texts {
				ids, cuts, err := tok.EncodeCuts(a)
				if err != nil {
					t.Fatal(err)
				}
				if want := mustEncodeT(t, tok, a); !slices.Equal(ids, want) {
					t.Fatalf("EncodeCuts(%q) = %v, Encode %v", a, ids, want)
				}
				pids, pcuts, err := tokenizer.EncodeCutsWith(tok, a, 3, 16)
				if err != nil || !slices.Equal(pids, ids) || !slices.Equal(pcuts, cuts) {
					t.Fatalf("EncodeCuts(%q) on 3 goroutines = %v %v, serial %v %v (%v)", a, pids, pcuts, ids, cuts, err)
				}
				found += len(cuts)
				for _, c := range cuts {
					for _, tail := range []string{texts[(i+1)%len(texts)], "", " " + a, a[c.Offset:]} {
						b := a[:c.Offset] + tail
						got, after, ok, err := tok.Resume(b, c, ids)
						if err != nil {
							t.Fatal(err)
						}
						// The same on three goroutines, in units of 16 bytes.
						pgot, pafter, pok, err := tokenizer.ResumeWith(tok, b, c, ids, 3, 16)
						if err != nil || pok != ok || !slices.Equal(pgot, got) || !slices.Equal(pafter, after) {
							t.Fatalf("Resume(%q at %d) on 3 goroutines differs: %v %v %v, serial %v %v %v", b, c.Offset, pgot, pafter, pok, got, after, ok)
						}
						if !ok {
							refused++
							continue
						}
						resumed++
						want, wantCuts, _ := tok.EncodeCuts(b)
						if !slices.Equal(got, want) {
							t.Fatalf("Resume(%q at %d) = %v, encoded whole %v", b, c.Offset, got, want)
						}
						var tail []tokenizer.Cut
						for _, w := range wantCuts {
							if w.Offset > c.Offset {
								tail = append(tail, w)
							}
						}
						if !slices.Equal(after, tail) {
							t.Fatalf("Resume(%q at %d) cuts %v, encoded whole %v", b, c.Offset, after, tail)
						}
					}
				}
			}
			if found == 0 {
				t.Skip("its added tokens make no cuts (normalized, rstrip or single_word)")
			}
			if resumed == 0 {
				t.Fatalf("no text was resumed (%d refused)", refused)
			}
			t.Logf("%d resumed, %d refused", resumed, refused)
		})
	}
}

// A cut taken over by a longer added token in the new text is refused,
// and PostProcess adds what Encode adds.
func TestResumeRefusesACutAnAddedTokenCrosses(t *testing.T) {
	tok := sharedTokenizer(t, "qwen3")
	a := "hi<|im_end|>there"
	ids, cuts, err := tok.EncodeCuts(a)
	if err != nil {
		t.Fatal(err)
	}
	if len(cuts) != 1 || cuts[0].Offset != len("hi<|im_end|>") {
		t.Fatalf("cuts of %q = %v, want one after <|im_end|>", a, cuts)
	}
	if _, _, ok, _ := tok.Resume("hi<|im_end|>", tokenizer.Cut{Offset: 99, Tokens: 1}, ids); ok {
		t.Error("Resume accepted a cut past the text's end")
	}
	if got := tok.PostProcess(ids); !slices.Equal(got, mustEncodeSpecial(t, tok, a)) {
		t.Errorf("PostProcess = %v, Encode with special tokens %v", got, mustEncodeSpecial(t, tok, a))
	}
}

func mustEncodeT(t *testing.T, tok *tokenizer.Tokenizer, s string) []uint32 {
	t.Helper()
	ids, err := tok.Encode(s, false)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func mustEncodeSpecial(t *testing.T, tok *tokenizer.Tokenizer, s string) []uint32 {
	t.Helper()
	ids, err := tok.Encode(s, true)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// FuzzResume: a text resumed at a cut of another text it shares that
// beginning with encodes as the text whole, for the fuzz tokenizers.
func FuzzResume(f *testing.F) {
	f.Add("You are helpful.", uint8(0), "Hello there", "\n<|im_start|>assistant\n")
	f.Add("", uint8(3), " ", "  x")
	f.Add("a", uint8(1), "<|im_", "end|>")
	f.Fuzz(func(t *testing.T, a string, pick uint8, b, c string) {
		for _, ft := range loadFuzzTokenizers(t) {
			added := ft.tok.AddedTokens()
			if len(added) == 0 {
				continue
			}
			mid := a + added[int(pick)%len(added)].Content
			first := mid + b
			ids, cuts, err := ft.tok.EncodeCuts(first)
			if err != nil {
				continue
			}
			next := mid + c
			for _, cut := range cuts {
				if cut.Offset > len(mid) {
					break
				}
				got, _, ok, err := ft.tok.Resume(next, cut, ids)
				if err != nil || !ok {
					continue
				}
				if want, err := ft.tok.Encode(next, false); err == nil && !slices.Equal(got, want) {
					t.Fatalf("%s: Resume(%q at %d) = %v, encoded whole %v", ft.name, next, cut.Offset, got, want)
				}
			}
		}
	})
}

// CutOffsets finds the offsets of the cuts EncodeCuts returns.
func TestCutOffsetsAreEncodeCutsOffsets(t *testing.T) {
	tok := sharedTokenizer(t, "qwen3")
	for _, text := range resumeTexts(t, tok, rand.New(rand.NewPCG(3, 4)), 50) {
		_, cuts, err := tok.EncodeCuts(text)
		if err != nil {
			t.Fatal(err)
		}
		var want []int
		for _, c := range cuts {
			want = append(want, c.Offset)
		}
		if got := tok.CutOffsets(nil, text); !slices.Equal(got, want) {
			t.Fatalf("CutOffsets(%q) = %v, EncodeCuts' %v", text, got, want)
		}
	}
}
