package normalize

import "testing"

// TestUnicodeHFPatches pins code points where HF's normalizers differ from
// Go's unicode tables (values from the HF sweep,
// ../pretok/testdata/gen_unicode_hf.js).
func TestUnicodeHFPatches(t *testing.T) {
	cases := []struct {
		n       Normalizer
		in, out string
	}{
		// Combining marks newer than HF's unicode_categories Mn: kept.
		{Bert{StripAccents: true}, "x\u1DF6y\u0898\u0301", "x\u1DF6y\u0898"},
		{Bert{StripAccents: true}, "\u1734", ""}, // Mn in HF's table, Mc in Go's
		// Format characters newer than HF's table: not removed.
		{Bert{CleanText: true}, "a\u0890b\u200bc\U00013430", "a\u0890bc\U00013430"},
		{StripAccents{}, "a\u07FDb\u0301\u1CF2", "a\u07FDb"},
		// Unicode 16 case pairs.
		{Lowercase{}, "\u1C89\uA7CB\U00010D50A", "\u1C8A\u0264\U00010D70a"},
	}
	for _, c := range cases {
		if got := c.n.Normalize(c.in); got != c.out {
			t.Errorf("%T.Normalize(%+q) = %+q, want %+q", c.n, c.in, got, c.out)
		}
	}
}
