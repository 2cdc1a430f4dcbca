// Package deploytest is what the tests of deploy/ share: the repository's
// root, the stack's binaries built once per test process, and the check
// that a command line or an environment written in a deployment file is
// one those binaries accept.
package deploytest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/dynamo-go/dynamo/internal/testenv"
)

// Commands are the binaries deployment files run, by the name of their
// directory under cmd/ (and of their image in deploy/docker).
var Commands = []string{"frontend", "mocker", "worker", "bench"}

// Root returns the repository root (testenv.RepoRoot).
func Root(t testing.TB) string { return testenv.RepoRoot(t) }

var build struct {
	once sync.Once
	dir  string
	err  error
}

// Main runs the tests of a package and then removes the binaries Binary
// built, if any. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	os.Exit(code)
}

// Binary returns the path of the built binary of command (one of
// Commands). The first call builds all of them with one go build, the
// same command line test/e2e uses, so that the build cache serves both.
func Binary(t testing.TB, command string) string {
	t.Helper()
	build.once.Do(func() {
		root := Root(t)
		build.dir, build.err = os.MkdirTemp("", "dynamo-deploy-bin-")
		if build.err != nil {
			return
		}
		args := []string{"build", "-o", build.dir + string(filepath.Separator)}
		for _, c := range Commands {
			args = append(args, "github.com/dynamo-go/dynamo/cmd/"+c)
		}
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return filepath.Join(build.dir, command)
}

var helpCache sync.Map // command -> string

// Help returns what command --help prints (bench: bench --help, which
// lists every subcommand's flags).
func Help(t testing.TB, command string) string {
	t.Helper()
	if h, ok := helpCache.Load(command); ok {
		return h.(string)
	}
	out, code := run(t, Binary(t, command), "--help")
	if code != 0 {
		t.Fatalf("%s --help: exit %d\n%s", command, code, out)
	}
	helpCache.Store(command, out)
	return out
}

// varRef is a Kubernetes $(VAR) reference in a container's args.
var varRef = regexp.MustCompile(`\$\([A-Za-z_][A-Za-z0-9_]*\)`)

// CheckArgs fails the test unless command accepts args: it runs
// `command args... --help` with an empty environment, which parses every
// flag (its name and the syntax of its value) and stops before doing
// anything; an unknown flag, a bad value or a stray argument exits 2.
// Kubernetes $(VAR) references are replaced by a placeholder first. where
// says which file and object the line comes from. For bench, args[0] is
// the subcommand.
func CheckArgs(t testing.TB, where, command string, args []string) {
	t.Helper()
	line := make([]string, 0, len(args)+1)
	for _, a := range args {
		line = append(line, varRef.ReplaceAllString(a, "placeholder"))
	}
	line = append(line, "--help")
	out, code := run(t, Binary(t, command), line...)
	if code != 0 {
		t.Errorf("%s: %s %s: not accepted (exit %d):\n%s", where, command, strings.Join(args, " "), code, firstLines(out, 3))
	}
}

// knownPrefixes are the prefixes of the environment variables the stack
// reads; CheckEnv checks only names with one of them.
var knownPrefixes = []string{"DYN_", "ETCD_", "NATS_", "OTEL_", "HF_"}

// CheckEnv fails the test unless every variable of env that the stack
// would read (a name starting DYN_, ETCD_, NATS_, OTEL_ or HF_) is one
// command's --help names: literally, or through the patterns it prints
// (OTEL_EXPORTER_OTLP_*, DYN_MOCKER_<FLAG>, DYN_WORKER_<FLAG>,
// DYN_METRICS_<NAME>_...). A misspelt variable is otherwise silently
// ignored.
func CheckEnv(t testing.TB, where, command string, env []string) {
	t.Helper()
	help := Help(t, command)
	for _, name := range env {
		if !hasAnyPrefix(name, knownPrefixes) {
			continue
		}
		if !EnvKnown(help, name) {
			t.Errorf("%s: %s reads no variable %s (not in its --help)", where, command, name)
		}
	}
}

// EnvKnown reports whether help, a binary's --help text, names the
// environment variable name.
func EnvKnown(help, name string) bool {
	if regexp.MustCompile(`(^|[^A-Z0-9_])` + regexp.QuoteMeta(name) + `($|[^A-Z0-9_])`).MatchString(help) {
		return true
	}
	if strings.HasPrefix(name, "OTEL_EXPORTER_OTLP_") && strings.Contains(help, "every OTEL_EXPORTER_OTLP_* variable") {
		return true
	}
	for _, p := range []string{"DYN_MOCKER_", "DYN_WORKER_"} {
		if rest, ok := strings.CutPrefix(name, p); ok && strings.Contains(help, p+"<FLAG>") {
			flagName := "-" + strings.ReplaceAll(strings.ToLower(rest), "_", "-") + " "
			if strings.Contains(help, "  "+flagName) || strings.Contains(help, "  "+strings.TrimSpace(flagName)+"\n") {
				return true
			}
		}
	}
	if strings.HasPrefix(name, "DYN_METRICS_") && strings.Contains(help, "DYN_METRICS_<NAME>_") {
		return true
	}
	return false
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// run runs bin with args and an empty environment and returns its
// combined output and exit code.
func run(t testing.TB, bin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return out.String(), ee.ExitCode()
		}
		t.Fatalf("%s: %v", bin, err)
	}
	return out.String(), 0
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
