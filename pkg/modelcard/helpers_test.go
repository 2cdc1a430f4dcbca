package modelcard

import (
	"os"
	"path/filepath"
	"testing"
)

// demoDir is the repository's demo model.
var demoDir = filepath.Join("..", "..", "models", "demo")

// sharedModels holds real model files (tokenizers, configs) in the shared
// folder beside the repository (../shared); it is not part of it.
var sharedModels = filepath.Join("..", "..", "..", "shared", "testdata", "models")

// sharedModel returns the path of a shared model directory, skipping the
// test when the shared test data is absent.
func sharedModel(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(sharedModels, name)
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("shared model test data not available (%s): %v", dir, err)
	}
	return dir
}

// writeModel writes files into a new temporary model directory.
func writeModel(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, contents := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(contents), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// tinyTokenizer is a minimal tokenizer.json with a few ids.
const tinyTokenizer = `{"added_tokens":[{"id":5,"content":"<eos>"},{"id":6,"content":"<bos>"}],
"model":{"type":"WordLevel","vocab":{"a":0,"b":1,"</s>":2}}}`
