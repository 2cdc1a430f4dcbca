package loadgen

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func sampleReport(label string, ttftP50 float64) *Report {
	c := DefaultConfig()
	c.Model = "m"
	c.Rate = 500
	return &Report{
		Label: label, Config: c.record(), DurationS: 10,
		Launched: 105, Completed: 97, Refused: 5, Failed: 3, RetriedIdleConn: 2,
		Errors:        map[ErrorKind]int{KindHTTP: 2, KindTimeout: 1},
		HTTPStatus:    map[string]int{"500": 2},
		RefusedStatus: map[string]int{"429": 1, "503": 4},
		ErrorSamples:  []string{"loadgen: http_status 500: engine died"},
		Refusal:       Summary{Count: 5, Mean: 300, P50: 250, P90: 500, P99: 600, Max: 610},
		InputTokens:   12800, OutputTokens: 6400,
		RequestThroughput: 9.7, OutputTokenThroughput: 640, InputTokenThroughput: 1280, ArrivalRate: 10,
		TTFT: Summary{Count: 97, Mean: 1.5, P50: ttftP50, P90: 2, P99: 3, Max: 4},
	}
}

func TestReportJSONRoundTrip(t *testing.T) {
	want := sampleReport("stack", 1.25)
	var buf bytes.Buffer
	if err := want.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"ttft_ms"`, `"request_throughput_rps"`, `"achieved_arrival_rate_rps"`, `"http_status": {`, `"arrival": "poisson"`, `"retried_idle_conn": 2`} {
		if !strings.Contains(buf.String(), key) {
			t.Errorf("JSON lacks %s:\n%s", key, buf.String())
		}
	}
	got, err := ReadReport(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if _, err := ReadReport(strings.NewReader("{")); err == nil {
		t.Error("ReadReport accepted truncated JSON")
	}
}

func TestWriteTable(t *testing.T) {
	var buf bytes.Buffer
	if err := sampleReport("stack", 1.25).WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{`run "stack"`, "poisson rate=500/s", "97 completed, 5 refused, 3 failed", "retried (idle conn closed) 2)", "http_status=2 (500×2), timeout=1",
		"refused:    429×1 503×4; answered in 250.000 ms (p50), 600.000 ms (p99), 610.000 ms (max)", "TTFT", "1.250", "p99"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestWriteCompare(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteCompare(&buf, sampleReport("base", 1), sampleReport("stack", 1.5), "base.json", "stack.json"); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"a = base.json", "b = stack.json", "TTFT p50 ms", "+0.500", "1.500", "retried (idle conn closed)"} {
		if !strings.Contains(out, want) {
			t.Errorf("comparison lacks %q:\n%s", want, out)
		}
	}
}
