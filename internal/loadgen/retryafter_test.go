package loadgen

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Refusals (503 with Retry-After here) are counted apart from failures,
// with the time they took to come back; a closed-loop worker refused
// with Retry-After waits that long before its next request, unless told
// to ignore it, when it retries at once.
func TestClosedLoopHonoursRetryAfter(t *testing.T) {
	refuseUntil := time.Now().Add(time.Second)
	baseline := BaselineHandler(BaselineOptions{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if time.Now().Before(refuseUntil) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":{"message":"The model's workers are busy","type":"Service Unavailable","code":503}}`)
			return
		}
		baseline.ServeHTTP(w, r)
	}))
	defer srv.Close()

	for _, ignore := range []bool{false, true} {
		refuseUntil = time.Now().Add(time.Second)
		cfg := testConfig(srv.URL)
		cfg.Concurrency, cfg.Requests, cfg.Warmup, cfg.Duration = 2, 0, 0, 1500*time.Millisecond
		cfg.IgnoreRetryAfter = ignore
		rep := runFor(t, cfg)
		if rep.Failed != 0 || rep.RefusedStatus["503"] != rep.Refused || rep.Refusal.Count != rep.Refused || rep.Completed == 0 {
			t.Errorf("ignore %v: %d completed, %d refused (%v), %d failed, refusal times %d; want refusals counted apart, then completions",
				ignore, rep.Completed, rep.Refused, rep.RefusedStatus, rep.Failed, rep.Refusal.Count)
		}
		if !ignore && rep.Refused > 4 {
			t.Errorf("honouring Retry-After: %d refusals in the refusing second from 2 workers, want one or two each", rep.Refused)
		}
		if ignore && rep.Refused < 20 {
			t.Errorf("ignoring Retry-After: %d refusals, want a storm of instant retries", rep.Refused)
		}
	}
}

func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		h    string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"3", 3 * time.Second, true},
		{"-2", 0, true},
		{now.Add(7 * time.Second).Format(http.TimeFormat), 7 * time.Second, true},
		{"soon", 0, false},
	} {
		if got, ok := retryAfter(c.h, now); got != c.want || ok != c.ok {
			t.Errorf("retryAfter(%q) = %v, %v; want %v, %v", c.h, got, ok, c.want, c.ok)
		}
	}
}
