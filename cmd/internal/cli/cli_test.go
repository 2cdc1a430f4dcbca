package cli

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		code     int
		done     bool
		inStderr string
	}{
		{args: []string{"--size", "3"}},
		{args: []string{"--help"}, code: 0, done: true, inStderr: "usage: demo\n  -size int\n    \tsize (default 1)\n  -version\n"},
		{args: []string{"--bogus"}, code: 2, done: true, inStderr: "flag provided but not defined: -bogus"},
		{args: []string{"extra"}, code: 2, done: true, inStderr: `demo: unexpected arguments ["extra"]`},
	} {
		var stderr strings.Builder
		fs := NewFlagSet("demo", &stderr)
		size := fs.Int("size", 1, "size")
		code, done := Parse(fs, tc.args, "usage: demo\n", "ENVIRONMENT\n")
		if code != tc.code || done != tc.done {
			t.Errorf("%q: Parse = %d, %v; want %d, %v", tc.args, code, done, tc.code, tc.done)
		}
		if !strings.Contains(stderr.String(), tc.inStderr) {
			t.Errorf("%q: stderr %q lacks %q", tc.args, stderr.String(), tc.inStderr)
		}
		if tc.args[0] == "--help" && !strings.HasSuffix(stderr.String(), "ENVIRONMENT\n") {
			t.Errorf("--help ends %q, want the help after the flags", stderr.String())
		}
		if !done && *size != 3 {
			t.Errorf("--size = %d, want 3", *size)
		}
	}
}
