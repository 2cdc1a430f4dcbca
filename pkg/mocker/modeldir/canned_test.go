package modeldir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCannedResponsesFileErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ contents, want string }{
		{`{"prompt_contains": "a", "text": "b"}`, "want a JSON list"},
		{`[{"prompt_contains": "a", "text": "b"`, "want a JSON list"},
		{`[{"prompt_contains": "", "text": "b"}]`, "entry 0: prompt_contains is empty"},
		{`[{"prompt_contains": "a", "text": "b"}, {"prompt_contains": "c"}]`, "entry 1: want text or texts"},
		{`[{"prompt_contains": "a", "txt": "b"}]`, `unknown field "txt"`},
	} {
		file := filepath.Join(dir, "canned.json")
		if err := writeFile(file, tc.contents); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadCanned(file); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.contents, err, tc.want)
		}
	}
	if _, err := ReadCanned(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "--canned-responses") {
		t.Errorf("missing file: %v", err)
	}
}

func writeFile(path, contents string) error { return os.WriteFile(path, []byte(contents), 0o600) }
