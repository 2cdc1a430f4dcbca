// Package cli is the command-line prologue the binaries share: a flag set
// that reports to stderr, --help with the command's usage lines above the
// flags and its environment variables below them, --version, and exit
// code 2 for a bad flag or a stray argument (two lines: the reason, and
// where the flags are listed).
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/dynamo-go/dynamo/cmd/internal/version"
)

// NewFlagSet returns the empty flag set of the command name: it writes
// its errors and usage to stderr, and its Parse returns them instead of
// exiting.
func NewFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// Parse adds --version to fs (made by NewFlagSet, with the command's
// flags registered) and parses args. Its usage prints usage, the flags
// with their defaults, then help. It returns done and the code to exit
// with when the command stops here: 0 after --help, or after --version
// (the version printed on stdout); 2 after a bad flag or a positional
// argument, the reason printed on fs's output.
func Parse(fs *flag.FlagSet, args []string, usage, help string) (code int, done bool) {
	showVersion := version.Flag(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), help)
	}
	if code, done := ParseFlags(fs, args); done {
		return code, true
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected arguments %q\n", fs.Name(), fs.Args())
		return 2, true
	}
	if *showVersion {
		version.Print(os.Stdout, fs.Name())
		return 0, true
	}
	return 0, false
}

// ParseFlags parses args into fs (its flags registered, its Usage set)
// without the flag package's own reporting. --help (-h) prints fs.Usage
// and returns 0, true. A bad flag (unknown, or a value that does not
// parse) prints two lines, not the whole usage:
//
//	frontend: flag provided but not defined: -foo
//	run 'frontend --help' for the flags
//
// and returns 2, true. Otherwise it returns 0, false.
func ParseFlags(fs *flag.FlagSet, args []string) (code int, done bool) {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	switch {
	case err == nil:
		return 0, false
	case errors.Is(err, flag.ErrHelp):
		if usage == nil {
			fmt.Fprintf(out, "usage of %s:\n", fs.Name())
			fs.PrintDefaults()
		} else {
			usage()
		}
		return 0, true
	}
	fmt.Fprintf(out, "%s: %v\nrun '%s --help' for the flags\n", fs.Name(), err, fs.Name())
	return 2, true
}
