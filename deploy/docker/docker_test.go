package docker

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"

	"github.com/dynamo-go/dynamo/deploy/internal/deploytest"
)

func TestMain(m *testing.M) { deploytest.Main(m) }

// targets are the images the Dockerfile builds, each named for the binary
// it runs.
var targets = []string{"frontend", "mocker", "worker"}

// parse reads the Dockerfile with BuildKit's parser into its stages and
// the ARGs before the first FROM.
func parse(t *testing.T) ([]instructions.Stage, []instructions.ArgCommand) {
	t.Helper()
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	res, err := parser.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	for _, w := range res.Warnings {
		t.Errorf("Dockerfile: parser warning: %s", w.Short)
	}
	stages, meta, err := instructions.Parse(res.AST, nil)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	return stages, meta
}

// pinned is an image reference with a tag and a digest:
// name:tag@sha256:<64 hex>.
var pinned = regexp.MustCompile(`^[a-z0-9./-]+:([A-Za-z0-9_.-]+)@sha256:[0-9a-f]{64}$`)

func TestBaseImagesArePinned(t *testing.T) {
	stages, meta := parse(t)
	if len(meta) > 0 {
		t.Errorf("ARGs before the first FROM: base images are written out in FROM, so the pins can be checked")
	}
	var names []string
	for _, s := range stages {
		if slices.Contains(names, s.BaseName) {
			continue // an earlier stage
		}
		m := pinned.FindStringSubmatch(s.BaseName)
		switch {
		case m == nil:
			t.Errorf("stage %q: FROM %s: want NAME:TAG@sha256:DIGEST", s.Name, s.BaseName)
		case m[1] == "latest":
			t.Errorf("stage %q: FROM %s: a tag that names a release, not latest", s.Name, s.BaseName)
		}
		names = append(names, s.Name)
	}
}

func TestImagesRunAsNonRootWithoutHealthcheck(t *testing.T) {
	stages, _ := parse(t)
	byName := map[string]instructions.Stage{}
	for _, s := range stages {
		byName[s.Name] = s
		for _, c := range s.Commands {
			if _, ok := c.(*instructions.HealthCheckCommand); ok {
				t.Errorf("stage %q: HEALTHCHECK: orchestrators probe /live and /health instead", s.Name)
			}
		}
	}
	for _, target := range targets {
		s, ok := byName[target]
		if !ok {
			t.Errorf("no stage %q", target)
			continue
		}
		var user string
		var entrypoint []string
		for _, c := range s.Commands {
			switch c := c.(type) {
			case *instructions.UserCommand:
				user = c.User
			case *instructions.EntrypointCommand:
				if c.PrependShell {
					t.Errorf("%s: ENTRYPOINT in shell form: signals would go to the shell", target)
				}
				entrypoint = c.CmdLine
			}
		}
		// Numeric, so that Kubernetes' runAsNonRoot can verify it.
		uid, _, _ := strings.Cut(user, ":")
		if n, err := strconv.Atoi(uid); err != nil || n == 0 {
			t.Errorf("%s: USER %q: want a numeric non-root uid", target, user)
		}
		if want := []string{"/usr/local/bin/" + target}; !slices.Equal(entrypoint, want) {
			t.Errorf("%s: ENTRYPOINT %q, want %q", target, entrypoint, want)
		}
	}
}

// The mocker image serves the demo model out of the box: its default
// command names the directory the model is copied to, and the mocker
// accepts it.
func TestMockerImageHasTheDemoModel(t *testing.T) {
	stages, _ := parse(t)
	for _, s := range stages {
		if s.Name != "mocker" {
			continue
		}
		var copied, cmd []string
		var env []string
		for _, c := range s.Commands {
			switch c := c.(type) {
			case *instructions.CopyCommand:
				if c.From == "" {
					copied = append(copied, c.SourcePaths...)
					copied = append(copied, c.DestPath)
				}
			case *instructions.CmdCommand:
				cmd = c.CmdLine
			case *instructions.EnvCommand:
				for _, kv := range c.Env {
					env = append(env, kv.Key)
				}
			}
		}
		if !slices.Equal(copied, []string{"models/demo", "/models/demo"}) {
			t.Errorf("mocker: COPY %q, want models/demo to /models/demo", copied)
		}
		if _, err := os.Stat(filepath.Join(deploytest.Root(t), "models/demo/tokenizer.json")); err != nil {
			t.Error(err)
		}
		if !slices.Equal(cmd, []string{"--model-path", "/models/demo"}) {
			t.Errorf("mocker: CMD %q", cmd)
		}
		deploytest.CheckArgs(t, "Dockerfile mocker CMD", "mocker", cmd)
		deploytest.CheckEnv(t, "Dockerfile mocker ENV", "mocker", env)
		return
	}
	t.Fatal("no mocker stage")
}

// xFlag is one -X importpath.name=value of the build's -ldflags, with the
// build argument that gives the value.
var xFlag = regexp.MustCompile(`-X ([A-Za-z0-9_./-]+)=\$\{?([A-Z_]+)\}?`)

// The binaries are built static and stamped with the VERSION and COMMIT
// build arguments: the -X flags of the Dockerfile's go build, given test
// values here, come out of every binary's --version.
func TestBuildStampsVersionAndCommit(t *testing.T) {
	stages, _ := parse(t)
	var run string
	var args []string
	for _, s := range stages {
		for _, c := range s.Commands {
			switch c := c.(type) {
			case *instructions.RunCommand:
				if line := strings.Join(c.CmdLine, " "); strings.Contains(line, "go build") {
					run = line
				}
			case *instructions.ArgCommand:
				if run == "" {
					for _, a := range c.Args {
						args = append(args, a.Key)
					}
				}
			}
		}
	}
	if run == "" {
		t.Fatal("no RUN with go build")
	}
	if !strings.Contains(run, "CGO_ENABLED=0") {
		t.Error("go build without CGO_ENABLED=0: the images' base has no C library")
	}
	for _, c := range deploytest.Commands {
		if !strings.Contains(run, "./cmd/"+c) {
			t.Errorf("go build does not build ./cmd/%s", c)
		}
	}
	values := map[string]string{"VERSION": "v0.0.0-image-test", "COMMIT": "0123456789abcdef"}
	var ldflags []string
	for _, m := range xFlag.FindAllStringSubmatch(run, -1) {
		v, ok := values[m[2]]
		if !ok || !slices.Contains(args, m[2]) {
			t.Errorf("-X %s=${%s}: want a declared build argument VERSION or COMMIT", m[1], m[2])
		}
		ldflags = append(ldflags, "-X", m[1]+"="+v)
		delete(values, m[2])
	}
	if len(values) > 0 {
		t.Fatalf("go build stamps no %v", values)
	}

	root := deploytest.Root(t)
	dir := t.TempDir()
	build := exec.Command("go", "build", "-ldflags", strings.Join(ldflags, " "), "-o", dir+string(filepath.Separator))
	for _, c := range deploytest.Commands {
		build.Args = append(build.Args, "./cmd/"+c)
	}
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, c := range deploytest.Commands {
		out, err := exec.Command(filepath.Join(dir, c), "--version").Output()
		if err != nil {
			t.Errorf("%s --version: %v", c, err)
			continue
		}
		if want := c + " v0.0.0-image-test (commit 0123456789abcdef, go"; !strings.HasPrefix(string(out), want) {
			t.Errorf("%s --version = %q, want %q...", c, out, want)
		}
	}

	// With cgo off every package of the binaries still builds: none of
	// them needs C (go list reports a package that would have no files).
	list := exec.Command("go", "list", "-e", "-deps", "-f", "{{if .Error}}{{.ImportPath}}: {{.Error}}{{end}}", "./cmd/...")
	list.Dir = root
	list.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := list.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("CGO_ENABLED=0 go list ./cmd/...: %v\n%s", err, out)
	}
}

// The build context is the repository root; the Dockerfile's ignore file
// must keep what the build copies.
func TestIgnoreFileKeepsTheSources(t *testing.T) {
	b, err := os.ReadFile("Dockerfile.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		p := strings.TrimSpace(line)
		if p == "" || strings.HasPrefix(p, "#") {
			continue
		}
		for _, keep := range []string{"go.mod", "go.sum", "cmd", "pkg", "internal", "models", "models/demo"} {
			if ok, _ := filepath.Match(p, keep); ok || p == keep {
				t.Errorf("Dockerfile.dockerignore: %q excludes %s, which the build needs", p, keep)
			}
		}
	}
}
