package hfhub

import (
	"os"
	"path/filepath"
	"strings"
)

// looksLocal reports whether modelPath, which is not an existing
// directory, is nevertheless a local path and so must not go to the hub,
// and why: it holds a path separator and is not of the form org/name
// ("./models/x", "/data/x", "a/b/c"), or it is of that form but its parent
// directory exists ("models/dmeo" where models/ does: a mistyped
// directory, not a hub id). A bare name is neither (false, "").
func looksLocal(modelPath string) (why string, local bool) {
	if !strings.ContainsRune(modelPath, '/') && !strings.ContainsRune(modelPath, filepath.Separator) {
		return "", false
	}
	if !IsHubID(modelPath) {
		return "it has a path separator and is not of the form org/name", true
	}
	parent := filepath.Dir(modelPath)
	if st, err := os.Stat(parent); err == nil && st.IsDir() {
		return "its parent directory " + parent + " exists", true
	}
	return "", false
}
