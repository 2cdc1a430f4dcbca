package cli

import (
	"flag"
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

// A bad flag prints the reason and where the flags are, not the usage.
func TestParseBadFlagPrintsTwoLines(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--foo"}, "demo: flag provided but not defined: -foo\nrun 'demo --help' for the flags\n"},
		{[]string{"--size", "many"}, "demo: invalid value \"many\" for flag -size: parse error\nrun 'demo --help' for the flags\n"},
	} {
		var stderr strings.Builder
		fs := NewFlagSet("demo", &stderr)
		fs.Int("size", 1, "size")
		code, done := Parse(fs, tc.args, "usage: demo\n", "ENVIRONMENT\n")
		if code != 2 || !done {
			t.Errorf("%q: Parse = %d, %v; want 2, true", tc.args, code, done)
		}
		if stderr.String() != tc.want {
			t.Errorf("%q: stderr %q, want %q", tc.args, stderr.String(), tc.want)
		}
	}
}

// ParseFlags on a flag set without its own Usage still answers --help.
func TestParseFlagsDefaultUsage(t *testing.T) {
	var stderr strings.Builder
	fs := flag.NewFlagSet("bare", flag.ContinueOnError)
	fs.SetOutput(&stderr)
	fs.Bool("v", false, "verbose")
	if code, done := ParseFlags(fs, []string{"-h"}); code != 0 || !done || !strings.Contains(stderr.String(), "-v\tverbose") {
		t.Errorf("-h: %d, %v, stderr %q", code, done, stderr.String())
	}
}
