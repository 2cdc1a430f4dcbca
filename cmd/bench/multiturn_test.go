package main

import (
	"bytes"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dynamo-go/dynamo/internal/loadgen"
)

// bench run --workload multi-turn sends conversations and reports each
// turn's prompt tokens and TTFT, in the table and in the JSON.
func TestRunMultiTurnReportsByTurn(t *testing.T) {
	srv := httptest.NewServer(loadgen.BaselineHandler(loadgen.BaselineOptions{}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "out.json")
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"run", "--url", srv.URL, "--model", "x", "--workload", "multi-turn",
		"--turns", "3", "--history-len", "100", "--turn-len", "10", "--osl", "5",
		"--concurrency", "2", "--requests", "12", "--warmup", "0", "--json", path}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
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
	// The first message has 100 − 2·(10+5) = 70 words; the last turn
	// holds it, two answers of 5 and two turns of 10.
	if rep.Completed != 12 || len(rep.Turns) != 3 || rep.Turns[2].PromptTokens != 100 || rep.Turns[0].PromptTokens != 70 {
		t.Fatalf("completed %d, by turn %+v; want 12 turns, prompts of 70, 85 and 100 tokens", rep.Completed, rep.Turns)
	}
	if c := rep.Config; c.Workload != loadgen.WorkloadMultiTurn || c.Turns != 3 || c.HistoryLen != 100 || c.TurnLen != 10 || c.FirstLen != 70 {
		t.Errorf("config recorded as %+v", c)
	}
	for _, want := range []string{"turns:      12 completed", "by turn:", "TTFT p50 ms", "100.0", "conversations: "} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, stdout.String())
		}
	}
}
