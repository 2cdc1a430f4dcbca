package pretok

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

// cutConfigs lists pre-tokenizers with what cutAtSpace says of them; the
// shared models' ones are covered by TestCutAtSpaceModels.
var cutConfigs = []struct {
	cfg  string
	want verdict
}{
	{`{"type":"ByteLevel","add_prefix_space":true}`, cut},
	{`{"type":"ByteLevel","add_prefix_space":false}`, cut},
	{`{"type":"ByteLevel","add_prefix_space":true,"use_regex":false}`, mayDiffer},
	{`{"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true}`, cut},
	{`{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":true}`, cut},
	{`{"type":"Metaspace","replacement":"▁","prepend_scheme":"never","split":true}`, cut},
	{`{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":false}`, mayDiffer},
	{`{"type":"Metaspace","replacement":"x","prepend_scheme":"always","split":true}`, mayDiffer},
	{`{"type":"Whitespace"}`, cut},
	{`{"type":"WhitespaceSplit"}`, cut},
	{`{"type":"BertPreTokenizer"}`, cut},
	{`{"type":"CharDelimiterSplit","delimiter":" "}`, cut},
	{`{"type":"CharDelimiterSplit","delimiter":"-"}`, joined},
	{`{"type":"CharDelimiterSplit","delimiter":"e"}`, mayDiffer},
	{`{"type":"UnicodeScripts"}`, mayDiffer},
	{`{"type":"FixedLength","length":3}`, mayDiffer},
	{`{"type":"Punctuation","behavior":"Isolated"}`, joined},
	{`{"type":"Punctuation","behavior":"Contiguous"}`, joined},
	{`{"type":"Punctuation","behavior":"MergedWithPrevious"}`, joined},
	{`{"type":"Punctuation","behavior":"MergedWithNext"}`, joined},
	{`{"type":"Punctuation","behavior":"Removed"}`, joined},
	{`{"type":"Digits","individual_digits":true}`, joined},
	{`{"type":"Digits","individual_digits":false}`, joined},
	{`{"type":"Split","pattern":{"String":"--"},"behavior":"MergedWithNext","invert":false}`, joined},
	{`{"type":"Split","pattern":{"String":"--"},"behavior":"Removed","invert":true}`, cut},
	{`{"type":"Split","pattern":{"String":"--"},"behavior":"Isolated","invert":true}`, joined},
	{`{"type":"Split","pattern":{"String":"--"},"behavior":"Contiguous","invert":true}`, mayDiffer},
	{`{"type":"Split","pattern":{"String":"a-"},"behavior":"Isolated","invert":false}`, mayDiffer},
	{`{"type":"Split","pattern":{"String":" "},"behavior":"Isolated","invert":false}`, mayDiffer},
	{`{"type":"Split","pattern":{"Regex":"\\d+"},"behavior":"Isolated","invert":false}`, mayDiffer},
	{`{"type":"Split","pattern":{"Regex":` + jsonString(PatternThreeDigits) + `},"behavior":"Isolated","invert":false}`, joined},
	{`{"type":"Split","pattern":{"Regex":` + jsonString(PatternDigits3) + `},"behavior":"Isolated","invert":false}`, joined},
	{`{"type":"Split","pattern":{"Regex":` + jsonString(PatternDeepSeekCJK) + `},"behavior":"Isolated","invert":false}`, joined},
	{`{"type":"Split","pattern":{"Regex":` + jsonString(PatternGPT2) + `},"behavior":"Isolated","invert":false}`, cut},
	{`{"type":"Split","pattern":{"Regex":` + jsonString(PatternGPT2) + `},"behavior":"Removed","invert":true}`, cut},
	{`{"type":"Split","pattern":{"Regex":` + jsonString(PatternGPT2) + `},"behavior":"Contiguous","invert":false}`, mayDiffer},
	{`{"type":"Split","pattern":{"Regex":` + jsonString(PatternLlama3) + `},"behavior":"Isolated","invert":false}`, cut},
	{`{"type":"Split","pattern":{"Regex":` + jsonString(PatternQwen2) + `},"behavior":"Isolated","invert":false}`, cut},
	{`{"type":"Split","pattern":{"Regex":` + jsonString(PatternO200k) + `},"behavior":"Isolated","invert":false}`, cut},
	{`{"type":"Split","pattern":{"Regex":` + jsonString(PatternDeepSeekV3) + `},"behavior":"Isolated","invert":false}`, cut},
	{`{"type":"Split","pattern":{"Regex":` + jsonString(PatternCLIP) + `},"behavior":"Removed","invert":true}`, cut},
	{`{"type":"Split","pattern":{"Regex":` + jsonString(PatternCLIP) + `},"behavior":"Isolated","invert":false}`, cut},
	{`{"type":"Sequence","pretokenizers":[{"type":"Punctuation","behavior":"Contiguous"},{"type":"ByteLevel","add_prefix_space":true}]}`, cut},
	{`{"type":"Sequence","pretokenizers":[{"type":"Digits","individual_digits":true},{"type":"Metaspace","replacement":"▁","prepend_scheme":"first"}]}`, cut},
	{`{"type":"Sequence","pretokenizers":[{"type":"WhitespaceSplit"},{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":false}]}`, cut},
	{`{"type":"Sequence","pretokenizers":[{"type":"WhitespaceSplit"},{"type":"UnicodeScripts"}]}`, cut},
	{`{"type":"Sequence","pretokenizers":[{"type":"Sequence","pretokenizers":[{"type":"Punctuation"}]},{"type":"Whitespace"}]}`, cut},
	{`{"type":"Sequence","pretokenizers":[{"type":"Punctuation"},{"type":"Digits"}]}`, joined},
	{`{"type":"Sequence","pretokenizers":[{"type":"ByteLevel","use_regex":false},{"type":"Whitespace"}]}`, mayDiffer},
	{`{"type":"Sequence","pretokenizers":[{"type":"FixedLength"},{"type":"WhitespaceSplit"}]}`, mayDiffer},
	{`{"type":"Sequence","pretokenizers":[]}`, joined},
}

// cutPairs returns texts x ending with an ASCII letter and texts y (half
// of them starting with one), from the scanner corpus (plus invalid
// UTF-8).
func cutPairs() [][2]string {
	corpus := append(catCorpus(), "\xff", "a\xc3", "\xe2\x82 x", "<x> --a-- 12 345", "x\u0301 y")
	rng := rand.New(rand.NewSource(3))
	letters := "aZsStTrlLdmvx"
	var out [][2]string
	for i := range 6000 {
		x := corpus[rng.Intn(len(corpus))] + string(letters[rng.Intn(len(letters))])
		y := corpus[rng.Intn(len(corpus))]
		if i%2 == 0 {
			y = string(letters[rng.Intn(len(letters))]) + y
		}
		out = append(out, [2]string{x, y})
	}
	return out
}

// TestCutAtSpace checks each verdict on many texts: "cut" means the splits
// of x+" "+y are those of x then those of " "+y; "joined" the same, the
// two splits next to the space being one.
func TestCutAtSpace(t *testing.T) {
	pairs := cutPairs()
	for _, c := range cutConfigs {
		p := mustPT(t, c.cfg)
		s := p.(impl).stage
		if got := cutAtSpace(s); got != c.want {
			t.Errorf("%s: verdict %d, want %d", c.cfg, got, c.want)
			continue
		}
		if CutsAtSpace(p) != (c.want == cut) {
			t.Errorf("%s: CutsAtSpace = %v", c.cfg, !(c.want == cut))
		}
		if c.want == mayDiffer {
			continue
		}
		for _, xy := range pairs {
			for _, atStart := range []bool{true, false} {
				if err := checkCut(s, xy[0], xy[1], atStart, c.want); err != nil {
					t.Fatalf("%s: %v", c.cfg, err)
				}
			}
		}
	}
}

func checkCut(s stage, x, y string, atStart bool, v verdict) error {
	whole, wFirst := s.run(nil, []string{x + " " + y}, atStart)
	left, lFirst := s.run(nil, []string{x}, atStart)
	right, _ := s.run(nil, []string{" " + y}, false)
	parts := slices.Concat(left, right)
	if v == joined && len(left) > 0 && len(right) > 0 {
		parts = slices.Concat(left[:len(left)-1], []string{left[len(left)-1] + right[0]}, right[1:])
	}
	if !slices.Equal(whole, parts) || wFirst != lFirst && len(left) > 0 {
		return fmt.Errorf("x %q, y %q, atStart %v:\n  whole %q (first %v)\n  parts %q + %q (first %v)",
			x, y, atStart, whole, wFirst, left, right, lFirst)
	}
	return nil
}

// TestCutAtSpaceModels: the verdicts on the shared models' pre-tokenizers,
// each checked on the texts.
func TestCutAtSpaceModels(t *testing.T) {
	pairs := cutPairs()[:3000]
	for model, want := range map[string]bool{
		"bert-base-uncased":             true,
		"clip":                          true,
		"falcon":                        true,
		"llama-3-8b-instruct":           true,
		"qwen2.5-instruct":              true,
		"phi-2":                         true,
		"roberta-base":                  true,
		"t5-small":                      true,
		"nmt-unigram":                   true,
		"chatglm":                       false, // Split on a literal with letters
		"llama-2-hf-internal-testing":   false, // no pre-tokenizer
		"qwen2-1.5b-instruct-boundless": true,
	} {
		t.Run(model, func(t *testing.T) {
			p, err := FromJSON(modelSection(t, model, "pre_tokenizer"))
			if err != nil {
				t.Fatal(err)
			}
			if got := CutsAtSpace(p); got != want {
				t.Fatalf("CutsAtSpace = %v, want %v", got, want)
			}
			if !want {
				return
			}
			for _, xy := range pairs {
				if err := checkCut(p.(impl).stage, xy[0], xy[1], true, cut); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
