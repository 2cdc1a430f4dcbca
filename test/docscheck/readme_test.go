package docscheck

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
)

// command is a shell command of a README transcript ("$ cmd", with its
// continuation lines) and the output the README shows after it.
type command struct {
	line int    // of README.md, for messages
	cmd  string // as the README writes it, continuations joined
	out  string // the lines after it, up to the next command or the fence
}

// quickstart returns the commands of the fenced blocks in README's
// sections whose heading names the quickstart.
func quickstart(readme []byte) []command {
	var (
		cmds    []command
		inQuick bool
		fenced  bool
		cur     *command
		cont    bool // the last command line ended with a backslash
	)
	flush := func() {
		if cur != nil {
			cmds = append(cmds, *cur)
			cur = nil
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(readme))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case !fenced && strings.HasPrefix(line, "## "):
			inQuick = strings.Contains(strings.ToLower(line), "quickstart")
			continue
		case strings.HasPrefix(line, "```"):
			fenced = !fenced
			flush()
			continue
		case !fenced || !inQuick:
			continue
		}
		switch {
		case cont:
			cur.cmd += "\n" + line
		case strings.HasPrefix(line, "$ "):
			flush()
			cur = &command{line: n, cmd: strings.TrimPrefix(line, "$ ")}
		case cur != nil:
			cur.out += line + "\n"
		}
		cont = cur != nil && strings.HasSuffix(line, `\`) && (cont || strings.HasPrefix(line, "$ "))
	}
	flush()
	return cmds
}

// readmePort is the port the README's commands use.
const readmePort = "8000"

func TestReadmeQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("docscheck: skipped under -short (builds and runs the stack)")
	}
	for _, tool := range []string{"bash", "make", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("docscheck: %s not found; the README's quickstart needs it", tool)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds := quickstart(readme)
	if len(cmds) == 0 || cmds[0].cmd != "make run" {
		t.Fatalf("README.md's quickstart starts with %v, want the command `make run` first", cmds)
	}
	run, curls := cmds[0], cmds[1:]
	if len(curls) == 0 {
		t.Fatal("README.md's quickstart shows no command after `make run`")
	}

	// make run, as the README says, on a port the frontend picks (the
	// README's own HTTP_PORT), on loopback, its logs kept out of bin/.
	var out testenv.Buffer
	mk := exec.Command("make", "run")
	mk.Dir = root
	logs := t.TempDir()
	mk.Env = append(cleanEnv(), "HTTP_PORT=0", "DYN_HTTP_HOST=127.0.0.1", "LOG_DIR="+logs)
	mk.Stdout, mk.Stderr = &out, &out
	mk.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // make and the script: one group to signal
	if err := mk.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- mk.Wait() }()
	t.Cleanup(func() {
		// Ctrl-C, as the README stops it: the script stops its children.
		_ = syscall.Kill(-mk.Process.Pid, syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-mk.Process.Pid, syscall.SIGKILL)
			<-exited
			t.Error("make run did not stop within 15s of SIGINT")
		}
		if t.Failed() {
			t.Logf("make run's output:\n%s", out.String())
		}
	})
	serving := regexp.MustCompile(`Serving model "demo" on http://localhost:(\d+) `)
	var port string
	// A cold build of the two binaries takes minutes on 2 cores; a warm
	// one, seconds.
	testenv.WaitFor(t, 5*time.Minute, "make run to serve", func() bool {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("make run exited: %v\n%s", err, out.String())
		default:
		}
		if m := serving.FindStringSubmatch(out.String()); m != nil {
			port = m[1]
		}
		return port != ""
	})
	// What the README shows make run print, up to the Ctrl-C, is printed
	// (the port is the one it picked).
	for _, want := range strings.Split(strings.TrimSpace(run.out), "\n") {
		if want == "^C" {
			break
		}
		want = strings.ReplaceAll(want, ":"+readmePort, ":"+port)
		for _, f := range []string{"frontend.log", "mocker.log"} {
			want = strings.ReplaceAll(want, "bin/"+f, filepath.Join(logs, f))
		}
		if !strings.Contains(out.String(), strings.TrimSpace(want)) {
			t.Errorf("README.md:%d: make run does not print %q", run.line, want)
		}
	}

	for _, c := range curls {
		script := strings.ReplaceAll(c.cmd, "localhost:"+readmePort, "localhost:"+port)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		got, err := exec.CommandContext(ctx, "bash", "-c", script).Output()
		cancel()
		if err != nil {
			t.Errorf("README.md:%d: %s: %v\n%s", c.line, c.cmd, err, got)
			continue
		}
		if err := sameShape(c.out, string(got)); err != nil {
			t.Errorf("README.md:%d: %s: the answer is not shaped as the README shows: %v\ngot:\n%s", c.line, c.cmd, err, got)
		}
	}
}

// cleanEnv is the test's environment without the stack's own variables
// (DYN_*, ETCD_*, NATS_*), which would change what make run starts.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DYN_") && !strings.HasPrefix(kv, "ETCD_") && !strings.HasPrefix(kv, "NATS_") && !strings.HasPrefix(kv, "MAKE") {
			env = append(env, kv)
		}
	}
	return env
}

// sameShape compares an answer with the one the README shows: a JSON
// value, or a server-sent event stream ("data: " lines, a "..." line for
// those left out, "data: [DONE]" last). Values differ from run to run;
// the fields and their JSON types must not.
func sameShape(want, got string) error {
	want, got = strings.TrimSpace(want), strings.TrimSpace(got)
	if !strings.HasPrefix(want, "data: ") {
		return shapeOf(want, got, "")
	}
	events := func(s string) []string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if d, ok := strings.CutPrefix(l, "data: "); ok {
				out = append(out, d)
			}
		}
		return out
	}
	w, g := events(want), events(got)
	if len(w) < 2 || w[len(w)-1] != "[DONE]" {
		return fmt.Errorf("the README's stream does not end with data: [DONE]")
	}
	if len(g) < 2 || g[len(g)-1] != "[DONE]" {
		return fmt.Errorf("%d events, the last %q; want chunks and data: [DONE]", len(g), g[len(g)-1:])
	}
	w, g = w[:len(w)-1], g[:len(g)-1]
	// The first and the last chunk are compared with the README's first
	// and last; the ones between with the README's second.
	for i, ev := range g {
		ref := w[min(i, 1)]
		if i == len(g)-1 {
			ref = w[len(w)-1]
		}
		if err := shapeOf(ref, ev, fmt.Sprintf("event %d", i)); err != nil {
			return err
		}
	}
	return nil
}

// shapeOf compares two JSON texts field by field.
func shapeOf(want, got, where string) error {
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		return fmt.Errorf("the README's answer is not JSON: %v", err)
	}
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		return fmt.Errorf("%s: not JSON: %v", where, err)
	}
	return same(w, g, where)
}

// same reports where g differs from w in its fields or their types (a
// null in the README accepts any value; arrays compare their first item).
func same(w, g any, path string) error {
	if w == nil {
		return nil
	}
	switch w := w.(type) {
	case map[string]any:
		gm, ok := g.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %T, want an object", path, g)
		}
		for k := range gm {
			if _, ok := w[k]; !ok {
				return fmt.Errorf("%s.%s: a field the README does not show", path, k)
			}
		}
		for k, wv := range w {
			gv, ok := gm[k]
			if !ok {
				return fmt.Errorf("%s.%s: missing", path, k)
			}
			if err := same(wv, gv, path+"."+k); err != nil {
				return err
			}
		}
	case []any:
		ga, ok := g.([]any)
		if !ok {
			return fmt.Errorf("%s: %T, want an array", path, g)
		}
		if len(w) > 0 && len(ga) > 0 {
			return same(w[0], ga[0], path+"[0]")
		}
		if len(w) > 0 {
			return fmt.Errorf("%s: empty, want items", path)
		}
	default:
		if fmt.Sprintf("%T", w) != fmt.Sprintf("%T", g) {
			return fmt.Errorf("%s: %T (%v), want a %T", path, g, g, w)
		}
	}
	return nil
}

// The checks themselves: the quickstart's commands are found, and an
// answer of another shape (an error body, a missing or renamed field, a
// stream without [DONE]) fails.
func TestChecks(t *testing.T) {
	readme := []byte("## Quickstart: x\n\n```\n$ make run\nServing\n^C\n```\n\n```\n$ curl -s a \\\n    -d '{}'\n{\"a\":1,\"b\":[{\"c\":\"x\"}],\"d\":null}\n```\n\n## Other\n\n```\n$ curl other\n```\n")
	cmds := quickstart(readme)
	if len(cmds) != 2 || cmds[0].cmd != "make run" || cmds[1].cmd != "curl -s a \\\n    -d '{}'" || cmds[1].line != 10 {
		t.Fatalf("quickstart: %+v", cmds)
	}
	want := cmds[1].out
	for _, tc := range []struct {
		got string
		ok  bool
	}{
		{`{"a":2,"b":[{"c":"y"}],"d":{"e":1}}`, true},
		{`{"a":2,"b":[],"d":null}`, false}, // items the README shows are missing
		{`{"error":{"message":"Model not found"}}`, false},
		{`{"a":"2","b":[{"c":"y"}],"d":null}`, false},
		{`{"a":2,"b":[{"c":"y","x":1}],"d":null}`, false},
		{`{"a":2,"d":null}`, false},
		{`not json`, false},
	} {
		if err := sameShape(want, tc.got); (err == nil) != tc.ok {
			t.Errorf("sameShape(%s): %v, want ok %v", tc.got, err, tc.ok)
		}
	}
	stream := "data: {\"a\":1}\n\ndata: {\"a\":2}\n\n...\n\ndata: {\"a\":3,\"f\":\"stop\"}\n\ndata: [DONE]\n"
	for _, tc := range []struct {
		got string
		ok  bool
	}{
		{"data: {\"a\":1}\n\ndata: {\"a\":1}\n\ndata: {\"a\":1}\n\ndata: {\"a\":1,\"f\":\"x\"}\n\ndata: [DONE]\n", true},
		{"data: {\"a\":1}\n\ndata: {\"a\":1,\"f\":\"x\"}\n\n", false},
		{"data: {\"a\":1}\n\ndata: {\"a\":1}\n\ndata: [DONE]\n", false},
	} {
		if err := sameShape(stream, tc.got); (err == nil) != tc.ok {
			t.Errorf("sameShape(%q): %v, want ok %v", tc.got, err, tc.ok)
		}
	}
}
