package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/dynamo-go/dynamo/cmd/internal/cli"
)

// newFlagSet returns an empty flag set for command that reports to
// stderr; args describes the positional arguments in its usage line.
func newFlagSet(command, args string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("bench "+command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: bench %s %s\n", command, args)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args into fs and returns the exit code to stop with,
// or -1 to go on: 0 after --help, 2 after a bad flag (printed as one line
// and a pointer to --help, not the whole usage).
func parseFlags(fs *flag.FlagSet, args []string) int {
	if code, done := cli.ParseFlags(fs, args); done {
		return code
	}
	return -1
}

// noArgs reports stray positional arguments and returns 2, or -1.
func noArgs(fs *flag.FlagSet) int {
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected arguments %q\n", fs.Name(), fs.Args())
		return 2
	}
	return -1
}

// isSet reports whether name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
