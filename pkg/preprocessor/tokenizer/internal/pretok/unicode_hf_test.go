package pretok

import (
	"slices"
	"testing"
)

// TestUnicodeHFPatches pins code points where HF's classes differ from Go's
// unicode tables (values from the HF sweep, testdata/gen_unicode_hf.js).
func TestUnicodeHFPatches(t *testing.T) {
	classes := []struct {
		r    rune
		want uint8
	}{
		{0x10D40, cNumber}, {0x116D0, cNumber}, {0x1CCF0, cNumber}, {0x1E5F1, cNumber}, // Unicode 16 Nd
		{0x2EBF0, cLetter}, {0x2EE5D, cLetter}, {0x1C89, cLetter}, {0xA7CB, cLetter}, {0x13460, cLetter}, {0x105C0, cLetter},
		{0x2EE5E, cOther}, {0x1F600, cOther}, {0x4E00, cLetter}, {0x0663, cNumber},
	}
	for _, c := range classes {
		if got := class(c.r); got != c.want {
			t.Errorf("class(%U) = %d, want %d", c.r, got, c.want)
		}
	}
	punct := map[rune]bool{
		0x061D: false, 0x2E43: false, 0x2E4F: false, 0x2E5D: false, 0x11070: false, 0x1E95E: false, // newer than HF's table
		0x166D: true, 0x111C9: true, // P in HF's older table, So in Go's
		'!': true, 0x3001: true, 0x2E42: true, 'a': false,
	}
	for r, want := range punct {
		if got := isBertPunc(r); got != want {
			t.Errorf("isBertPunc(%U) = %v, want %v", r, got, want)
		}
	}
	for _, r := range []rune{0x10D40, 0x1CCF0, 0x16D70} {
		if !isNumeric(r) {
			t.Errorf("isNumeric(%U) = false", r)
		}
	}
	if !isWord(0x0897) || !isWord(0x2EBF0) {
		t.Error("isWord: Unicode 16 word characters missing")
	}
	// Scanner level: a Unicode 16 digit is its own \p{N}{1,3} piece; a
	// CJK Extension I letter joins the word.
	if got := allMatches(llama{maxDigits: 3}, "x\U00010D40y a\U0002EBF0"); !slices.Equal(got, [][2]int{{0, 1}, {1, 5}, {5, 6}, {6, 12}}) {
		t.Errorf("llama: %v", got)
	}
}
