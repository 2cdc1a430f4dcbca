package normalize

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"
	"unicode/utf8"
)

// TestUnicodeSweep runs every code point through the normalizers and
// compares with HF's output (HF_UNICODE_SWEEP: the output of
// ../pretok/testdata/gen_unicode_hf.js).
func TestUnicodeSweep(t *testing.T) {
	p := os.Getenv("HF_UNICODE_SWEEP")
	if p == "" {
		t.Skip("HF_UNICODE_SWEEP not set (path to the output of ../pretok/testdata/gen_unicode_hf.js)")
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Norm map[string]struct {
			Removed [][2]rune         `json:"removed"`
			Changed map[string]string `json:"changed"`
		} `json:"norm"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	norms := map[string]Normalizer{
		"bert_clean":    Bert{CleanText: true},
		"bert_strip":    Bert{StripAccents: true},
		"bert_chinese":  Bert{HandleChineseChars: true},
		"lowercase":     Lowercase{},
		"strip_accents": StripAccents{},
		"nfc":           NFC{},
		"nfd":           NFD{},
		"nfkc":          NFKC{},
		"nfkd":          NFKD{},
		"nmt":           Nmt{},
	}
	for name, n := range norms {
		t.Run(name, func(t *testing.T) {
			h, ok := s.Norm[name]
			if !ok {
				t.Skip("not in sweep")
			}
			want := map[rune]string{}
			for _, r := range h.Removed {
				for c := r[0]; c <= r[1]; c++ {
					want[c] = ""
				}
			}
			for k, v := range h.Changed {
				c, _ := strconv.Atoi(k)
				want[rune(c)] = v
			}
			var diff []string
			for r := rune(0); r <= utf8.MaxRune; r++ {
				if r >= 0xD800 && r <= 0xDFFF {
					continue
				}
				in := string(r)
				w, ok := want[r]
				if !ok {
					w = in
				}
				if got := n.Normalize(in); got != w {
					diff = append(diff, fmt.Sprintf("U+%04X(got %+q want %+q)", r, got, w))
				}
			}
			if len(diff) > 0 {
				if len(diff) > 30 {
					diff = append(diff[:30], "…")
				}
				t.Errorf("%d code points differ: %v", len(diff), diff)
			}
		})
	}
}
