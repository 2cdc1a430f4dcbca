package main

import (
	"io"
	"testing"

	"github.com/dynamo-go/dynamo/internal/testenv"
)

// TestDocumentedCommands parses every worker command of README.md and
// docs/ with the worker's own flags and environment: a flag renamed or
// a value no longer accepted fails here, not on a reader's machine.
func TestDocumentedCommands(t *testing.T) {
	testenv.CheckDocumentedCommands(t, "worker", func(args []string, env func(string) string, stderr io.Writer) int {
		_, code, _ := configure(args, env, stderr)
		return code
	})
}
