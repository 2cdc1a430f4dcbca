package pretok

import (
	"encoding/json"
	"os"
	"testing"
	"unicode/utf8"
)

// hfSweep is the output of testdata/gen_unicode_hf.js: HF's classification
// of every code point.
type hfSweep struct {
	Classes map[string][][2]rune `json:"classes"`
	Norm    map[string]struct {
		Removed [][2]rune         `json:"removed"`
		Changed map[string]string `json:"changed"`
	} `json:"norm"`
}

func loadSweep(t *testing.T) *hfSweep {
	t.Helper()
	p := os.Getenv("HF_UNICODE_SWEEP")
	if p == "" {
		t.Skip("HF_UNICODE_SWEEP not set (path to the output of testdata/gen_unicode_hf.js)")
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var s hfSweep
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

func inRanges(rs [][2]rune) func(rune) bool {
	m := map[rune]bool{}
	for _, r := range rs {
		for c := r[0]; c <= r[1]; c++ {
			m[c] = true
		}
	}
	return func(r rune) bool { return m[r] }
}

// TestUnicodeSweep compares every code point's classes with HF's.
func TestUnicodeSweep(t *testing.T) {
	s := loadSweep(t)
	checks := []struct {
		name string
		ours func(rune) bool
	}{
		{"onig_L", func(r rune) bool { return class(r) == cLetter }},
		{"onig_N", func(r rune) bool { return class(r) == cNumber }},
		{"onig_s", func(r rune) bool { return class(r) == cSpace }},
		{"bert_punc", isBertPunc},
		{"rust_whitespace", isSpaceRune},
		{"rust_numeric", isNumeric},
		{"regex_w", isWord},
		{"regex_s", isSpaceRune},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			hf := inRanges(s.Classes[c.name])
			var diff []rune
			for r := rune(0); r <= utf8.MaxRune; r++ {
				if r >= 0xD800 && r <= 0xDFFF {
					continue
				}
				if hf(r) != c.ours(r) {
					diff = append(diff, r)
				}
			}
			if len(diff) > 0 {
				t.Errorf("%d code points differ: %s", len(diff), fmtRunes(diff, 40))
			}
		})
	}
}

func fmtRunes(rs []rune, max int) string {
	out := ""
	for i, r := range rs {
		if i == max {
			return out + " …"
		}
		out += " U+" + hex(r)
	}
	return out
}

func hex(r rune) string {
	const d = "0123456789ABCDEF"
	b := []byte{}
	for r > 0 || len(b) < 4 {
		b = append([]byte{d[r&15]}, b...)
		r >>= 4
	}
	return string(b)
}
