// Package docscheck runs the commands README.md's quickstart shows, as
// a reader would, and fails when one no longer works as written: `make
// run` (scripts/run.sh, on a port the frontend picks, its logs in a
// temporary directory) and each curl of the section's transcripts,
// whose answers must have the shape the README prints (the same fields,
// of the same JSON types; the values are the mocker's and vary). It
// needs bash, make and curl, and skips with one line without them, and
// under go test -short.
//
// The package has no non-test code.
package docscheck
