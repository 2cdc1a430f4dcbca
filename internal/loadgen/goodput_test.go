package loadgen

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// With an SLO on TTFT the report counts the completed requests within it,
// and the goodput is those per second: every third request here is slow
// to its first token.
func TestGoodputCountsRequestsWithinTheSLO(t *testing.T) {
	fast := BaselineHandler(BaselineOptions{})
	slow := BaselineHandler(BaselineOptions{TTFT: 150 * time.Millisecond})
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%3 == 0 {
			slow.ServeHTTP(w, r)
			return
		}
		fast.ServeHTTP(w, r)
	}))
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.Concurrency, cfg.Requests, cfg.Warmup, cfg.SLOTTFT = 1, 9, 0, 100*time.Millisecond
	rep := runFor(t, cfg)
	if rep.Completed != 9 || rep.WithinSLO != 6 {
		t.Fatalf("%d completed, %d within the SLO; want 9 and 6", rep.Completed, rep.WithinSLO)
	}
	if want := float64(6) / rep.DurationS; rep.Goodput < want*0.99 || rep.Goodput > want*1.01 || rep.Config.SLOTTFT != "100ms" {
		t.Errorf("goodput %v req/s, SLO %q; want %.3f (6 in %.3f s), 100ms", rep.Goodput, rep.Config.SLOTTFT, want, rep.DurationS)
	}
	cfg.SLOTTFT = 0
	if rep := runFor(t, cfg); rep.Goodput != 0 || rep.WithinSLO != 0 {
		t.Errorf("without an SLO: goodput %v, within %d; want none", rep.Goodput, rep.WithinSLO)
	}
}
