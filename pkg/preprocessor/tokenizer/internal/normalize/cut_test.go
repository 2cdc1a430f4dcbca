package normalize

import (
	"math/rand"
	"strings"
	"testing"
)

// cutTexts returns texts x ending with two ASCII letters and y starting
// with one,
// built from runes that normalizers change (composition, case, marks,
// spaces, controls, CJK, invalid UTF-8).
func cutTexts() [][2]string {
	pool := []string{
		"a", "Z", "e", "\u0301", "\u0308", "\u0327", "é", "É", "Σ", "ς", "İ", "ſ", "ﬁ", "①", "Ａ", "ｶ", "ﾞ",
		"\u1100", "\u1161", "\u11a8", "가", "\u0b47", "\u0b3e", "你", "好", "😀", "\u200d", "\u200b",
		" ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u0000", "\u0001", "\u007f", "\ufffd",
		"▁", "'", ".", "1", "٣", "\u0600", "\u0d4e", "\xff", "\xc3", "\xe2\x82",
	}
	rng := rand.New(rand.NewSource(5))
	text := func() string {
		var b strings.Builder
		for range rng.Intn(12) {
			b.WriteString(pool[rng.Intn(len(pool))])
		}
		return b.String()
	}
	letters := "aAzZsSiIkK"
	var out [][2]string
	for range 20000 {
		out = append(out, [2]string{
			text() + string(letters[rng.Intn(len(letters))]) + string(letters[rng.Intn(len(letters))]),
			string(letters[rng.Intn(len(letters))]) + text(),
		})
	}
	return out
}

func TestSplitsAtSpace(t *testing.T) {
	cfgs := []struct {
		cfg  string
		want bool
	}{
		{`{"type":"NFC"}`, true},
		{`{"type":"NFD"}`, true},
		{`{"type":"NFKC"}`, true},
		{`{"type":"NFKD"}`, true},
		{`{"type":"Lowercase"}`, true},
		{`{"type":"StripAccents"}`, true},
		{`{"type":"Nmt"}`, true},
		{`{"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,"strip_accents":null,"lowercase":true}`, true},
		{`{"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,"strip_accents":true,"lowercase":false}`, true},
		{`{"type":"Sequence","normalizers":[{"type":"NFD"},{"type":"StripAccents"},{"type":"Lowercase"}]}`, true},
		{`{"type":"Sequence","normalizers":[]}`, true},
		{`{"type":"Strip","strip_left":true,"strip_right":true}`, false},
		{`{"type":"Prepend","prepend":"▁"}`, false},
		{`{"type":"Replace","pattern":{"String":" "},"content":"▁"}`, false},
		{`{"type":"ByteLevel"}`, false},
		{`{"type":"Sequence","normalizers":[{"type":"NFC"},{"type":"Prepend","prepend":"▁"}]}`, false},
	}
	texts := cutTexts()
	check := func(t *testing.T, name string, n Normalizer, want bool) {
		t.Helper()
		if got := SplitsAtSpace(n); got != want {
			t.Fatalf("%s: SplitsAtSpace = %v, want %v", name, got, want)
		}
		if !want {
			return
		}
		for _, xy := range texts {
			x, y := n.Normalize(xy[0]), n.Normalize(" "+xy[1])
			whole := n.Normalize(xy[0] + " " + xy[1])
			if whole != x+y {
				t.Fatalf("%s: n(%q + \" \" + %q) = %q, parts %q + %q", name, xy[0], xy[1], whole, x, y)
			}
			if x == "" || !isASCIILetter(x[len(x)-1]) || y == "" || y[0] != ' ' {
				t.Fatalf("%s: the context is not kept: %q | %q", name, x, y)
			}
		}
	}
	for _, c := range cfgs {
		n, err := FromJSON([]byte(c.cfg))
		if err != nil {
			t.Fatal(err)
		}
		check(t, c.cfg, n, c.want)
	}
	// The shared models' Precompiled charsmaps (T5, the NMT Unigram model).
	for _, model := range []string{"t5-small", "nmt-unigram"} {
		t.Run(model, func(t *testing.T) {
			n, err := FromJSON(modelSection(t, model, "normalizer"))
			if err != nil {
				t.Fatal(err)
			}
			if q, ok := n.(Sequence); ok {
				n = q[0] // nmt-unigram: Precompiled, Strip, Replace
			}
			check(t, model, n, true)
		})
	}
}
