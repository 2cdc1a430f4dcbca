package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/loadgen"
)

// Overload test parameters. Issue 20 asks for 30 s of load; in CI the
// load runs overloadFor per case (four cases), which is already many
// service times (an answer takes about 0.6 s), so the queue fills,
// dispatches and refuses many times over. DYN_E2E_OVERLOAD_DURATION
// (a Go duration, "30s") runs the length.
const (
	overloadSeqs    = 4   // --max-num-seqs of each of the two mockers
	overloadTokens  = 100 // OSL: ~0.6 s at --speedup-ratio 1
	overloadClients = 4 * overloadSeqs
	overloadFor     = 6 * time.Second
	overloadQueue   = overloadSeqs           // --router-queue-max: half the excess waits, half is refused at once
	overloadTimeout = 500 * time.Millisecond // --router-queue-timeout: less than most answers take, so waits time out too
	// overloadRefusalSlack bounds how late after the queue timeout a
	// refusal may come (a refusal for a full queue comes at once): the
	// issue's 100 ms. Measured from bench's send to the answer's headers,
	// the worst of 16 runs was 10 ms over the timeout, with two CPU-bound
	// processes beside the test on the 2-core machine (docs/benchmarks.md,
	// "Overload"): the frontend's timer, a lock and the error body.
	overloadRefusalSlack = 100 * time.Millisecond
	// overloadTTFTSlack bounds how far over the queue timeout plus one
	// prefill an admitted request's first token may come (p99). More than
	// the refusals' slack, for a measured reason: "one prefill" is taken
	// from a request alone, while an admitted one is prefilled by a worker
	// that also decodes its other sequences in the same forward passes;
	// the worst of 16 runs was 54 ms over, with the CPU-bound processes
	// beside it.
	overloadTTFTSlack = 250 * time.Millisecond
	// overloadRSSGrowth bounds how much the frontend's resident memory
	// may grow between the first seconds of the load and its end: the
	// queue is bounded and refused requests leave nothing behind.
	overloadRSSGrowth = 24 << 20
	// overloadTenantMax is --tenant-max-inflight.
	overloadTenantMax = 2
)

// TestOverload offers twice the capacity of two real-time mockers
// (--max-num-seqs 4 each) from 16 closed-loop streaming clients (cmd/bench,
// which honours Retry-After) to a frontend with a queue of 4 and a queue
// timeout of 500 ms, in each router mode, on the TCP request plane (where
// the outage was: ack timeouts) and on NATS. What the clients see:
// every request streams its whole answer or is refused with 503 and
// Retry-After (no other failure, none hangs), refused within the queue
// timeout plus a slack; the admitted requests' time to first token stays
// under the queue timeout plus one prefill plus the slack; the queue is
// used and its refusals counted; /health stays 200; the frontend's memory
// stays flat. Once the load stops the queue drains and a burst of as many
// requests as the workers hold is served without a refusal. In one case a
// tenant over --tenant-max-inflight is refused with 429 and Retry-After.
func TestOverload(t *testing.T) {
	duration := overloadFor
	if v := os.Getenv("DYN_E2E_OVERLOAD_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("DYN_E2E_OVERLOAD_DURATION=%q: %v", v, err)
		}
		duration = d
	}
	for _, c := range []struct {
		mode, plane string
		tenant      bool
	}{
		{"round-robin", "tcp", true},
		{"random", "nats", false},
		{"kv", "nats", false},
		{"kv", "tcp", false},
	} {
		t.Run(c.mode+"+"+c.plane, func(t *testing.T) { testOverload(t, c.mode, c.plane, duration, c.tenant) })
	}
}

func testOverload(t *testing.T, mode, plane string, duration time.Duration, tenant bool) {
	c := newCluster(t, "etcd", plane)
	for i := range 2 {
		c.startMocker(fmt.Sprintf("mocker-%d", i), []string{"--speedup-ratio", "1", "--max-num-seqs", strconv.Itoa(overloadSeqs)})
	}
	f := c.startFrontendArgs([]string{"--router-mode", mode,
		"--router-queue-max", strconv.Itoa(overloadQueue),
		"--router-queue-timeout", strconv.FormatFloat(overloadTimeout.Seconds(), 'f', -1, 64),
		"--tenant-max-inflight", strconv.Itoa(overloadTenantMax)})
	f.waitModels(t, "demo")
	f.waitFor(t, 30*time.Second, "/health to list both mockers' instances", func() bool {
		return len(f.instanceIDs(t)) == 2
	})
	pid := f.cmd.Process.Pid

	// One prefill: the time to first token of a request alone.
	idle := runBench(t, f, "idle", "--concurrency", "1", "--requests", "3")
	if idle.Completed != 3 {
		t.Fatalf("unloaded: %d of 3 requests completed: %v", idle.Completed, idle.ErrorSamples)
	}
	prefill := millis(idle.TTFT.Max)

	// The load, and what the test watches while it runs: /health, the
	// queue, the frontend's memory.
	var (
		maxPending  float64
		healthFails int
		rss         []rssSample
		rep         *loadgen.Report
		out         string
		err         error
	)
	ran := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(ran)
		rep, out, err = bench(t.Context(), f, "overload", "--concurrency", strconv.Itoa(overloadClients), "--duration", duration.String(), "--requests", "0")
	}()
	for running := true; running; {
		if resp, body := f.get(t, "/health"); resp.StatusCode != http.StatusOK {
			healthFails++
			t.Errorf("/health under overload: %d %s", resp.StatusCode, body)
		}
		if v, ok := f.scrape(t).value("dynamo_frontend_router_queue_pending_requests", `model="demo"`); ok {
			maxPending = max(maxPending, v)
		}
		if b := residentBytes(pid); b > 0 {
			rss = append(rss, rssSample{time.Since(start), b})
		}
		select {
		case <-ran:
			running = false
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err != nil {
		fatalf(t, []*process{f.process}, "bench: %v\n%s", err, out)
	}

	m := f.scrape(t)
	full, _ := m.value("dynamo_frontend_router_queue_rejected_total", `model="demo"`, `reason="queue_full"`)
	timedOut, _ := m.value("dynamo_frontend_router_queue_rejected_total", `model="demo"`, `reason="queue_timeout"`)
	t.Logf("%s+%s: %d requests in %.1f s: %d completed, %d refused %v (queue_full %v, queue_timeout %v; answered in p50 %.0f ms, p99 %.0f ms, max %.0f ms), %d failed; "+
		"TTFT p50 %.0f ms, p99 %.0f ms, max %.0f ms (one prefill: %v); at most %v pending",
		mode, plane, rep.Launched, rep.DurationS, rep.Completed, rep.Refused, rep.RefusedStatus, full, timedOut, rep.Refusal.P50, rep.Refusal.P99, rep.Refusal.Max,
		rep.Failed, rep.TTFT.P50, rep.TTFT.P99, rep.TTFT.Max, prefill.Round(time.Millisecond), maxPending)
	if rep.Failed != 0 {
		t.Errorf("%d requests failed (hung, broken or an error other than a refusal): %v %v", rep.Failed, rep.Errors, rep.ErrorSamples)
	}
	if rep.Completed == 0 || rep.Refused == 0 {
		t.Errorf("%d requests completed and %d were refused, want some of each under twice the capacity with a queue of %d", rep.Completed, rep.Refused, overloadQueue)
	}
	if rep.RefusedStatus["503"] != rep.Refused {
		t.Errorf("refusals by status %v, want 503 only", rep.RefusedStatus)
	}
	if rep.UsageMissing != 0 || rep.OutputTokens != int64(rep.Completed*overloadTokens) {
		t.Errorf("%d admitted requests streamed %d tokens (%d without usage), want %d each", rep.Completed, rep.OutputTokens, rep.UsageMissing, overloadTokens)
	}
	if late := millis(rep.Refusal.Max); late > overloadTimeout+overloadRefusalSlack {
		t.Errorf("a refusal came %v after its request, want within the queue timeout %v plus %v (getting a connection took up to %.0f ms of it)",
			late, overloadTimeout, overloadRefusalSlack, rep.RefusalConnect.Max)
	}
	if p99 := millis(rep.TTFT.P99); p99 > overloadTimeout+prefill+overloadTTFTSlack {
		t.Errorf("admitted requests' TTFT p99 %v, want within the queue timeout %v plus one prefill %v plus %v", p99, overloadTimeout, prefill, overloadTTFTSlack)
	}
	if healthFails > 0 {
		t.Errorf("/health failed %d times under overload", healthFails)
	}
	checkFlatRSS(t, rss)

	waits, _ := m.value("dynamo_frontend_router_queue_wait_seconds_count", `model="demo"`)
	if waits == 0 && maxPending == 0 {
		t.Errorf("no request was queued under twice the workers' capacity")
	}
	counted := 0.0
	for _, reason := range []string{"queue_full", "queue_timeout", "worker_full", "ack_timeout", "workers_busy"} {
		v, _ := m.value("dynamo_frontend_router_queue_rejected_total", `model="demo"`, `reason="`+reason+`"`)
		counted += v
	}
	if int(counted) != rep.Refused {
		t.Errorf("clients saw %d refusals, the queue counted %v", rep.Refused, counted)
	}
	if v, _ := m.value("dynamo_frontend_model_rejection_total", `model="demo"`, `endpoint="chat_completions"`); int(v) != rep.Refused {
		t.Errorf("model_rejection_total %v, want the %d refusals", v, rep.Refused)
	}

	// After the load: the queue drains, and a burst of as many requests
	// as the workers hold is served whole.
	waitFor(t, 10*time.Second, "the queue to drain", func() bool {
		v, ok := f.scrape(t).value("dynamo_frontend_router_queue_pending_requests", `model="demo"`)
		return ok && v == 0
	}, f.process)
	burst := runBench(t, f, "burst", "--concurrency", strconv.Itoa(2*overloadSeqs), "--requests", strconv.Itoa(2*overloadSeqs))
	if burst.Completed != 2*overloadSeqs || burst.Refused != 0 || burst.Failed != 0 {
		t.Errorf("a burst of %d after the load: %d completed, %d refused, %d failed (%v); want all completed", 2*overloadSeqs, burst.Completed, burst.Refused, burst.Failed, burst.ErrorSamples)
	}

	if tenant {
		testTenantLimit(t, f)
	}
}

// testTenantLimit runs one tenant's closed-loop clients, more of them
// than --tenant-max-inflight: the excess is refused with 429 and
// Retry-After (bench waits it out), the rest is served, and the refusals
// are counted as tenant_limit.
func testTenantLimit(t *testing.T, f *frontend) {
	rep := runBench(t, f, "tenant", "--concurrency", strconv.Itoa(3*overloadTenantMax), "--duration", "2s", "--requests", "0",
		"--header", "x-dynamo-tenant: t1")
	t.Logf("tenant: %d completed, %d refused %v (answered in max %.0f ms), %d failed", rep.Completed, rep.Refused, rep.RefusedStatus, rep.Refusal.Max, rep.Failed)
	if rep.Completed == 0 || rep.RefusedStatus["429"] == 0 || rep.RefusedStatus["429"] != rep.Refused || rep.Failed != 0 {
		t.Errorf("a tenant over its limit: %d completed, refusals %v, %d failed (%v); want some 429s and completions only",
			rep.Completed, rep.RefusedStatus, rep.Failed, rep.ErrorSamples)
	}
	m := f.scrape(t)
	if v, _ := m.value("dynamo_frontend_router_queue_rejected_total", `model="demo"`, `reason="tenant_limit"`); int(v) != rep.Refused {
		t.Errorf("tenant_limit refusals counted %v, clients saw %d", v, rep.Refused)
	}
}

// runBench runs cmd/bench against f (see bench) and returns its report.
func runBench(t *testing.T, f *frontend, label string, args ...string) *loadgen.Report {
	t.Helper()
	rep, out, err := bench(t.Context(), f, label, args...)
	if err != nil {
		fatalf(t, []*process{f.process}, "bench %s: %v\n%s", label, err, out)
	}
	return rep
}

// bench runs the cmd/bench binary against f with the overload test's
// request shape (16-word prompts, overloadTokens tokens, streamed) and
// returns its report and output.
func bench(ctx context.Context, f *frontend, label string, args ...string) (*loadgen.Report, string, error) {
	dir, err := os.MkdirTemp("", "overload-bench-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, label+".json")
	args = append([]string{"run", "--url", f.url, "--model", "demo", "--isl", "16", "--osl", strconv.Itoa(overloadTokens),
		"--warmup", "0", "--timeout", "30s", "--progress", "0", "--label", label, "--json", path}, args...)
	cmd := exec.CommandContext(ctx, benchBin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if code := cmd.ProcessState.ExitCode(); err != nil && code != 1 { // 1: nothing completed; the report says why
		return nil, out.String(), err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, out.String(), fmt.Errorf("no report: %w", err)
	}
	rep, err := loadgen.ReadReport(bytes.NewReader(b))
	return rep, out.String(), err
}

// millis is a report's milliseconds as a duration.
func millis(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// rssSample is the frontend's resident memory at a time into the load.
type rssSample struct {
	at    time.Duration
	bytes int64
}

// checkFlatRSS checks that the frontend's resident memory did not keep
// growing under the load: its peak over the last two thirds of the run
// exceeds its peak over the first third (when the queue and the
// connections filled) by at most overloadRSSGrowth.
func checkFlatRSS(t *testing.T, samples []rssSample) {
	t.Helper()
	if len(samples) < 6 {
		t.Logf("only %d RSS samples: not checked", len(samples))
		return
	}
	end := samples[len(samples)-1].at
	var early, late int64
	for _, s := range samples {
		if s.at < end/3 {
			early = max(early, s.bytes)
		} else {
			late = max(late, s.bytes)
		}
	}
	t.Logf("frontend RSS: %.1f MB in the first third of the load, at most %.1f MB after", float64(early)/(1<<20), float64(late)/(1<<20))
	if late > early+overloadRSSGrowth {
		t.Errorf("the frontend's RSS grew from %.1f MB to %.1f MB under a steady overload, want at most %d MB more",
			float64(early)/(1<<20), float64(late)/(1<<20), overloadRSSGrowth>>20)
	}
}

// residentBytes is the resident memory of process pid (VmRSS), or 0.
func residentBytes(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
