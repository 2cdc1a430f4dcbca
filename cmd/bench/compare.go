package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/dynamo-go/dynamo/internal/loadgen"
)

// compareMain is "bench compare a.json b.json": exit 1 when a report
// cannot be read, 2 for bad usage.
func compareMain(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("compare", "a.json b.json", stderr)
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if fs.NArg() != 2 {
		fmt.Fprintln(stderr, "usage: bench compare a.json b.json")
		return 2
	}
	var reps [2]*loadgen.Report
	var names [2]string
	for i, path := range fs.Args() {
		rep, err := readReport(path)
		if err != nil {
			fmt.Fprintf(stderr, "bench compare: %v\n", err)
			return 1
		}
		reps[i], names[i] = rep, path
		if rep.Label != "" {
			names[i] = fmt.Sprintf("%s (%s)", rep.Label, path)
		}
	}
	if err := loadgen.WriteCompare(stdout, reps[0], reps[1], names[0], names[1]); err != nil {
		fmt.Fprintf(stderr, "bench compare: %v\n", err)
		return 1
	}
	return 0
}

func readReport(path string) (*loadgen.Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rep, err := loadgen.ReadReport(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rep, nil
}
