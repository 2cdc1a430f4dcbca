package archtest

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// Module is the module path of this repository.
const Module = "github.com/dynamo-go/dynamo"

// Allowed maps a package tree (by module-relative path) to the project
// trees it may import. A tree may always import within itself. Trees not
// listed here under pkg/, internal/ or cmd/internal/ are violations until
// added: a new package has to take its place in the pipeline.
var Allowed = map[string][]string{
	"pkg/openai":                 {"internal/strictjson"},
	"pkg/kvblock":                {},
	"pkg/telemetry":              {},
	"pkg/runtime":                {"pkg/telemetry", "internal/strictjson"},
	"pkg/modelcard":              {},
	"pkg/hfhub":                  {},
	"pkg/backend":                {"pkg/runtime", "pkg/telemetry", "internal/strictjson"},
	"pkg/backend/worker":         {"pkg/backend", "pkg/runtime", "pkg/kvblock", "pkg/modelcard", "pkg/hfhub", "pkg/telemetry"},
	"pkg/mocker":                 {"pkg/backend", "pkg/runtime", "pkg/kvblock", "pkg/telemetry"},
	"pkg/mocker/modeldir":        {"pkg/mocker", "pkg/backend", "pkg/hfhub", "pkg/modelcard", "pkg/preprocessor", "pkg/openai"},
	"pkg/kvevents":               {"pkg/kvblock", "pkg/telemetry"},
	"pkg/bridge":                 {"pkg/backend", "pkg/runtime", "pkg/kvblock", "pkg/telemetry", "pkg/preprocessor/tokenizer"},
	"pkg/bridge/vllmwire":        {},
	"pkg/mocker/vllmapi":         {"pkg/mocker", "pkg/backend", "pkg/kvblock", "pkg/runtime", "pkg/telemetry", "pkg/bridge/vllmwire"},
	"pkg/router":                 {"pkg/runtime", "pkg/backend", "pkg/kvblock", "pkg/telemetry"},
	"pkg/migration":              {"pkg/runtime", "pkg/backend", "pkg/telemetry"},
	"pkg/prefill":                {"pkg/router", "pkg/runtime", "pkg/backend", "pkg/telemetry"},
	"pkg/preprocessor/toolcall":  {},
	"pkg/preprocessor/reasoning": {},
	"pkg/preprocessor":           {"pkg/runtime", "pkg/backend", "pkg/openai", "pkg/modelcard", "pkg/telemetry", "internal/jsonscan"},
	"pkg/admission":              {"pkg/runtime", "pkg/backend", "pkg/telemetry"},
	"pkg/pipeline":               {"pkg/admission", "pkg/preprocessor", "pkg/openai", "pkg/migration", "pkg/prefill", "pkg/router", "pkg/runtime", "pkg/backend", "pkg/modelcard", "pkg/kvblock", "pkg/telemetry"},
	"pkg/anthropic":              {"pkg/openai"},
	"pkg/frontend":               {"pkg/admission", "pkg/pipeline", "pkg/preprocessor", "pkg/router", "pkg/runtime", "pkg/backend", "pkg/openai", "pkg/anthropic", "pkg/modelcard", "pkg/telemetry", "pkg/responsestore"},
	"pkg/responsestore":          {},
	"internal/testenv":           {},
	"internal/testgguf":          {"pkg/preprocessor/tokenizer", "internal/jsonscan"},
	"internal/jsonscan":          {},
	"internal/strictjson":        {},
	"internal/archtest":          {},
	"internal/loadgen":           {"pkg/openai"},
	"internal/runtimeflags":      {"pkg/runtime", "pkg/telemetry"},

	// pkg/runtime's internal packages (the request planes, the
	// response-stream transport respstream, the codec, ...) serve its
	// root: discovery shares only the connection-failure classifier, and
	// runtimetest uses the root's API alone (archtest.Forbidden).
	"pkg/runtime/discovery":   {"pkg/runtime/internal/connfail"},
	"pkg/runtime/runtimetest": {"pkg/runtime"},

	// The commands' support floor: only cmd/ may import cmd/internal.
	"cmd/internal/cli":         {"cmd/internal/version"},
	"cmd/internal/envflag":     {},
	"cmd/internal/obsflags":    {"pkg/telemetry"},
	"cmd/internal/pprofserver": {},
	"cmd/internal/rungroup":    {},
	"cmd/internal/version":     {},
	"cmd/internal/workerflags": {"internal/runtimeflags", "pkg/backend/worker", "pkg/backend", "pkg/hfhub", "pkg/runtime", "pkg/telemetry", "pkg/preprocessor/toolcall", "pkg/preprocessor/reasoning"},
}

// Forbidden carves subtrees out of what Allowed permits, in production
// code (tests may reach further to build their fixtures):
//   - the HTTP layer asks the model registry (pkg/pipeline) for a model;
//     it neither routes by KV cache nor watches discovery itself;
//   - the frontend's stages share the engine contract (pkg/backend) with
//     the workers, never the worker itself;
//   - internal/testgguf imports nothing of the project; its tests compare
//     llama.cpp's tokenization with pkg/preprocessor/tokenizer's;
//   - pkg/runtime/runtimetest builds on the runtime's API, never on its
//     internal packages;
//   - pkg/bridge does not tokenize (the worker hands it the model's
//     tokenizer to check the engine's vocabulary against); its tests use
//     ours for that.
var Forbidden = map[string][]string{
	"pkg/frontend":     {"pkg/router/kv", "pkg/runtime/discovery", "pkg/backend/worker"},
	"pkg/preprocessor": {"pkg/backend/worker"},
	"pkg/migration":    {"pkg/backend/worker"},
	"pkg/admission":    {"pkg/backend/worker"},
	"pkg/prefill":      {"pkg/backend/worker", "pkg/router/kv"},
	"pkg/router":       {"pkg/backend/worker"},
	"pkg/pipeline":     {"pkg/backend/worker"},

	"pkg/runtime/runtimetest": {"pkg/runtime/internal"},

	"internal/testgguf": {"pkg/preprocessor/tokenizer"},
	"pkg/bridge":        {"pkg/preprocessor/tokenizer"},
}

// Unrestricted trees compose everything: binaries, examples, end-to-end
// tests, and deployment files whose tests build the processes' metric
// registries. The commands' support floor (CommandOnly) is not
// unrestricted: its packages keep to their Allowed lists.
var Unrestricted = []string{"cmd", "examples", "test", "deploy"}

// CommandOnly is the support floor of the commands: helpers only cmd/
// uses (flags bound to the environment, the command-line prologue,
// running owners, pprof, --version). Go already refuses an import of it
// from outside cmd/; the rule is stated here with the others.
// internal/runtimeflags stays in internal/: examples/hello reads the
// runtime's flags and environment as the commands do.
const CommandOnly = "cmd/internal"

// testOnly trees may be imported only from _test.go files (and
// unrestricted trees, and their own: internal/testgguf's command).
var testOnly = []string{"internal/testenv", "pkg/runtime/runtimetest", "internal/testgguf"}

// Check walks fsys (the repository root) and returns one line per import
// that breaks the rules, sorted.
func Check(fsys fs.FS) ([]string, error) {
	var bad []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); p != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		src, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, src, parser.ImportsOnly)
		if err != nil {
			return fmt.Errorf("archtest: %s: %w", p, err)
		}
		isTest := strings.HasSuffix(p, "_test.go")
		for _, imp := range f.Imports {
			target := strings.Trim(imp.Path.Value, `"`)
			if target != Module && !strings.HasPrefix(target, Module+"/") {
				continue
			}
			if msg := violation(path.Dir(p), strings.TrimPrefix(strings.TrimPrefix(target, Module), "/"), isTest); msg != "" {
				bad = append(bad, fmt.Sprintf("%s imports %s: %s", p, target, msg))
			}
		}
		return nil
	})
	sort.Strings(bad)
	return bad, err
}

func violation(from, to string, isTest bool) string {
	if within(to, CommandOnly) && !within(from, "cmd") {
		return "command support (" + CommandOnly + ") outside cmd/"
	}
	if tree(from, Unrestricted) != "" && !within(from, CommandOnly) {
		return ""
	}
	if t := tree(to, testOnly); t != "" && !isTest && !within(from, t) {
		return "test infrastructure in production code"
	}
	own := owner(from)
	if own == "" {
		return "package " + from + " has no place in archtest.Allowed"
	}
	if isTest && tree(to, testOnly) != "" {
		return ""
	}
	for _, no := range Forbidden[own] {
		if within(to, no) && !isTest {
			return fmt.Sprintf("%s may not import %s (archtest.Forbidden)", own, no)
		}
	}
	if within(to, own) {
		return ""
	}
	for _, ok := range Allowed[own] {
		if within(to, ok) {
			return ""
		}
	}
	return fmt.Sprintf("%s may import only %v (imports point along the pipeline)", own, Allowed[own])
}

// owner returns the longest tree in Allowed that contains dir.
func owner(dir string) string {
	keys := make([]string, 0, len(Allowed))
	for k := range Allowed {
		keys = append(keys, k)
	}
	return tree(dir, keys)
}

func tree(dir string, trees []string) string {
	best := ""
	for _, t := range trees {
		if within(dir, t) && len(t) > len(best) {
			best = t
		}
	}
	return best
}

func within(dir, t string) bool {
	return dir == t || strings.HasPrefix(dir, t+"/")
}
