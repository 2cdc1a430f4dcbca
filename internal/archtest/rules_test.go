package archtest

import (
	"os"
	"strings"
	"testing"
	"testing/fstest"
)

// TestRepositoryImportsFollowThePipeline is the guard itself.
func TestRepositoryImportsFollowThePipeline(t *testing.T) {
	bad, err := Check(os.DirFS("../.."))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// TestCheckCatchesViolations proves the guard can fail.
func TestCheckCatchesViolations(t *testing.T) {
	file := func(imports ...string) *fstest.MapFile {
		var b strings.Builder
		b.WriteString("package p\nimport (\n")
		for _, i := range imports {
			b.WriteString("\t\"" + Module + "/" + i + "\"\n")
		}
		b.WriteString(")\n")
		return &fstest.MapFile{Data: []byte(b.String())}
	}
	fsys := fstest.MapFS{
		"pkg/runtime/r.go":             file("pkg/router"),                           // against the pipeline
		"pkg/router/r.go":              file("pkg/runtime", "pkg/runtime/discovery"), // fine
		"pkg/openai/o.go":              file("pkg/backend"),                          // leaf importing up
		"pkg/router/x.go":              file("internal/testenv"),                     // test infra in prod
		"pkg/router/x_test.go":         file("internal/testenv"),                     // fine in a test
		"pkg/newthing/n.go":            file("pkg/runtime"),                          // not placed
		"cmd/frontend/main.go":         file("pkg/frontend", "internal/testenv"),     // unrestricted
		"pkg/migration/m.go":           file("pkg/backend"),                          // fine
		"pkg/router/kv/kv.go":          file("pkg/router"),                           // own tree
		"pkg/backend/backendtest/k.go": file("pkg/backend"),                          // own tree
		"pkg/frontend/f.go":            file("pkg/pipeline", "pkg/router"),           // fine
		"pkg/frontend/kv.go":           file("pkg/router/kv"),                        // routes itself
		"pkg/frontend/w.go":            file("pkg/runtime/discovery"),                // watches itself
		"pkg/frontend/f_test.go":       file("pkg/runtime/discovery"),                // fine in a test
		"pkg/migration/w.go":           file("pkg/backend/worker"),                   // the worker on the frontend side
		"pkg/router/g.go":              file("internal/testgguf"),                    // test infra in prod
		"internal/testgguf/cmd/c/m.go": file("internal/testgguf"),                    // test infra's own command
		"cmd/worker/w.go":              file("cmd/internal/rungroup", "pkg/backend"), // commands use their floor
		"cmd/internal/cli/c.go":        file("cmd/internal/version"),                 // fine
		"cmd/internal/envflag/e.go":    file("pkg/runtime"),                          // the floor keeps to its list
		"cmd/internal/newflag/n.go":    file("pkg/runtime"),                          // not placed
		"examples/x/m.go":              file("cmd/internal/envflag"),                 // command support outside cmd/
		"pkg/router/c.go":              file("cmd/internal/rungroup"),                // same
	}
	bad, err := Check(fsys)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"cmd/internal/envflag/e.go imports",
		"cmd/internal/newflag/n.go imports",
		"examples/x/m.go imports",
		"pkg/frontend/kv.go imports",
		"pkg/frontend/w.go imports",
		"pkg/migration/w.go imports",
		"pkg/newthing/n.go imports",
		"pkg/openai/o.go imports",
		"pkg/router/c.go imports",
		"pkg/router/g.go imports",
		"pkg/router/x.go imports",
		"pkg/runtime/r.go imports",
	}
	if len(bad) != len(want) {
		t.Fatalf("violations:\n%s\nwant %d", strings.Join(bad, "\n"), len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(bad[i], w) {
			t.Errorf("violation %d = %q, want prefix %q", i, bad[i], w)
		}
	}
}
