package testenv

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// CheckDocumentedCommands runs configure, a command's flag and
// environment parsing (its exit code: 0 when the command would start),
// on every command of README.md and docs/ that runs bin/name, with the
// environment the command line sets and nothing else, in a directory
// that holds the files the doc wrote before it (here-documents) and
// links to the repository's models/. A command that no longer parses is
// an error naming its file and line. It changes the working directory:
// no parallel tests.
func CheckDocumentedCommands(t *testing.T, name string, configure func(args []string, env func(string) string, stderr io.Writer) int) {
	t.Helper()
	root := RepoRoot(t)
	cmds, err := DocCommands(root, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) == 0 {
		t.Fatalf("no %s command found in README.md or docs/", name)
	}
	for _, c := range cmds {
		dir := t.TempDir()
		if err := os.Symlink(filepath.Join(root, "models"), filepath.Join(dir, "models")); err != nil {
			t.Fatal(err)
		}
		for _, f := range c.Files {
			if err := os.WriteFile(filepath.Join(dir, f.Name), []byte(f.Text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Chdir(dir)
		var out strings.Builder
		if code := configure(c.Args, DocEnv(c.Env), &out); code != 0 {
			t.Errorf("%s: %s %s: exit code %d:\n%s", c.Where, name, strings.Join(c.Args, " "), code, out.String())
		}
	}
	t.Logf("%d %s commands of the docs checked", len(cmds), name)
}
