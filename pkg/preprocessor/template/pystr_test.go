package template

import "testing"

// str.split and str.rsplit without a separator split on runs of any
// Python whitespace, multi-byte ones included (values from CPython 3.11).
func TestSplitOnWhitespace(t *testing.T) {
	ctx := NewOrderedMap()
	ctx.Set("s", " a\u3000b \u2003c\n")
	for _, tc := range []struct{ src, want string }{
		{"{{ s.split() }}", "['a', 'b', 'c']"},
		{"{{ s.split(none, 1) }}", "['a', 'b \u2003c\\n']"},
		{"{{ s.rsplit(none, 1) }}", "[' a\u3000b', 'c']"},
		{"{{ s.rsplit(none, 2) }}", "[' a', 'b', 'c']"},
		{"{{ 'a\u3000b'.rsplit(none, 1) }}", "['a', 'b']"},
	} {
		got, err := render(tc.src, ctx, DialectPython)
		if err != nil || got != tc.want {
			t.Errorf("%s = %q (%v), want %q", tc.src, got, err, tc.want)
		}
	}
}
