package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/loadgen"
	"github.com/dynamo-go/dynamo/internal/testenv"
)

func TestRunWritesJSONReport(t *testing.T) {
	srv := httptest.NewServer(loadgen.BaselineHandler(loadgen.BaselineOptions{}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "out.json")
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"run", "--url", srv.URL, "--model", "x", "--api", "completions",
		"--requests", "25", "--warmup", "3", "--concurrency", "5", "--isl", "16", "--osl", "4",
		"--json", path, "--label", "baseline"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := loadgen.ReadReport(f)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Completed != 25 || rep.Failed != 0 || rep.Label != "baseline" || rep.OutputTokens != 100 {
		t.Errorf("report: completed %d, failed %d, label %q, output tokens %d; want 25, 0, baseline, 100",
			rep.Completed, rep.Failed, rep.Label, rep.OutputTokens)
	}
	if rep.Config.API != loadgen.APICompletions || rep.Config.Concurrency != 5 || rep.Config.Warmup != 3 {
		t.Errorf("config recorded as %+v", rep.Config)
	}
	if !strings.Contains(stdout.String(), "25 completed") || !strings.Contains(stdout.String(), "TTFT") {
		t.Errorf("table:\n%s", stdout.String())
	}
}

// --header sends its headers with every request.
func TestRunSendsHeaders(t *testing.T) {
	baseline := loadgen.BaselineHandler(loadgen.BaselineOptions{})
	seen := make(chan string, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Get("X-Dynamo-Tenant") + "|" + r.Header.Get("X-Other")
		baseline.ServeHTTP(w, r)
	}))
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"run", "--url", srv.URL, "--model", "x", "--requests", "2", "--warmup", "0", "--osl", "2",
		"--header", "x-dynamo-tenant: a", "--header", "X-Other:b c"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	for range 2 {
		if got := <-seen; got != "a|b c" {
			t.Errorf("headers seen %q, want a|b c", got)
		}
	}
}

func TestRunJSONToStdout(t *testing.T) {
	srv := httptest.NewServer(loadgen.BaselineHandler(loadgen.BaselineOptions{}))
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"run", "--url", srv.URL + "/v1", "--model", "x", "--rate", "1000",
		"--requests", "10", "--osl", "3", "--json", "-"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	rep, err := loadgen.ReadReport(&stdout)
	if err != nil {
		t.Fatalf("stdout is not a JSON report: %v", err)
	}
	if rep.Completed != 10 || rep.Config.Arrival != "poisson" {
		t.Errorf("completed %d, arrival %q; want 10, poisson", rep.Completed, rep.Config.Arrival)
	}
	if !strings.Contains(stderr.String(), "TTFT") {
		t.Errorf("table not on stderr:\n%s", stderr.String())
	}
}

func TestRunFailsWhenNothingCompletes(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"run", "--url", srv.URL, "--model", "x", "--requests", "3", "--warmup", "0"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stdout.String(), "http_status=3 (404×3)") {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
}

func TestBadUsageExits2(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, "usage: bench COMMAND"},
		{[]string{"fly"}, `unknown command "fly"`},
		{[]string{"run", "--concurrency", "many"}, `invalid value "many" for flag -concurrency`},
		{[]string{"run", "--nope"}, "bench run: flag provided but not defined: -nope\nrun 'bench run --help' for the flags\n"},
		{[]string{"run", "--model", "x", "--api", "embeddings"}, `api "embeddings": want "chat" or "completions"`},
		{[]string{"run", "--model", "x", "--concurrency", "4", "--rate", "10"}, "--concurrency and --rate exclude each other"},
		{[]string{"run", "--model", "x", "--watch-pid", "12,frontend"}, "--watch-pid"},
		{[]string{"run", "--model", "x", "--header", "x-dynamo-tenant"}, `want "Name: value"`},
		{[]string{"run", "--api", "chat"}, "model is required"},
		{[]string{"run", "--model", "x", "--requests", "0"}, "set requests or duration"},
		{[]string{"run", "--model", "x", "--workload", "multi-turn", "--api", "completions"}, `workload multi-turn: api "completions": want "chat"`},
		{[]string{"run", "--model", "x", "--workload", "multi-turn", "--rate", "10"}, "conversations run closed loop"},
		{[]string{"run", "--model", "x", "--workload", "multi-turn", "--turns", "0"}, "turns 0: want at least 1"},
		{[]string{"run", "--model", "x", "--workload", "chats"}, `want "synthetic", "shared-prefix" or "multi-turn"`},
		{[]string{"run", "--model", "x", "extra"}, `unexpected arguments ["extra"]`},
		{[]string{"baseline", "--itl", "fast"}, `invalid value "fast" for flag -itl`},
		{[]string{"compare", "only-one.json"}, "usage: bench compare a.json b.json"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		if code := run(t.Context(), tt.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("bench %q: exit %d, stderr:\n%s\nwant exit 2 mentioning %q", tt.args, code, stderr.String(), tt.want)
		}
	}
}

func TestHelpListsEveryFlag(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d", code)
	}
	out := stdout.String()
	var names []string
	newRunFlags(io.Discard).fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	newBaselineFlags(io.Discard).fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	for _, n := range names {
		if !strings.Contains(out, "-"+n+" ") && !strings.Contains(out, "-"+n+"\n") {
			t.Errorf("--help does not list -%s", n)
		}
	}
	for _, want := range []string{"(default 8)", `(default "http://localhost:8000")`, "(default 1m0s)", "bench compare a.json b.json"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	stderr.Reset()
	if code := run(t.Context(), []string{"run", "-h"}, &stdout, &stderr); code != 0 || !strings.Contains(stderr.String(), "-max-inflight") {
		t.Errorf("run -h: exit %d, output:\n%s", code, stderr.String())
	}
}

func TestCompare(t *testing.T) {
	dir := t.TempDir()
	for i, label := range []string{"baseline", "stack"} {
		rep := &loadgen.Report{Label: label, Completed: 10, TTFT: loadgen.Summary{P50: float64(i + 1)}}
		var buf bytes.Buffer
		if err := rep.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, label+".json"), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"compare", filepath.Join(dir, "baseline.json"), filepath.Join(dir, "stack.json")}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"a = baseline (", "b = stack (", "TTFT p50 ms", "+1.000", "2.000", "retried (idle conn closed)"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	if code := run(t.Context(), []string{"compare", filepath.Join(dir, "missing.json"), filepath.Join(dir, "stack.json")}, &stdout, &stderr); code != 1 {
		t.Errorf("missing file: exit %d, want 1", code)
	}
}

func TestBaselineServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stderr testenv.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"baseline", "--addr", "127.0.0.1:0"}, io.Discard, &stderr) }()

	addr := waitAddr(t, &stderr)
	resp, err := http.Post(fmt.Sprintf("http://%s/v1/completions", addr), "application/json",
		strings.NewReader(`{"model":"m","prompt":"hi","max_tokens":2,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasSuffix(string(body), "data: [DONE]\n\n") {
		t.Errorf("stream:\n%s", body)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d:\n%s", code, stderr.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("baseline did not shut down")
	}
}

// waitAddr returns the address a command logged (addr=...) on stderr.
func waitAddr(t *testing.T, stderr *testenv.Buffer) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, rest, ok := strings.Cut(stderr.String(), "addr="); ok {
			addr, _, _ := strings.Cut(rest, " ")
			return strings.TrimSpace(addr)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no address reported:\n%s", stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
