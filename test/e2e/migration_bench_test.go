package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkMigrationGap measures what a migration costs the client: the
// time between the last chunk before a worker failure and the first chunk
// after it, as the client's SSE reader sees them.
//
// Real processes: one frontend (--migration-limit 1000) and two mocker
// processes on etcd and the request plane of the sub-benchmark. The
// mockers run in real time (--speedup-ratio 1, so a decode pass is ~6 ms
// and a prefill ~20 ms, as on a GPU), without prefix caching (every
// re-prefill is a full prefill), and with --drop-after-tokens 20: every
// response stream ends without its final marker after 20 tokens, the
// same "Disconnected" failure a SIGKILL gives. One operation is one
// streamed completion of 205 tokens, which migrates 10 times; requests
// are sent one at a time.
//
// The baseline is measured in the same run: after each migrated request,
// one fresh request per re-prefill length (prompt + tokens generated so
// far) with max_tokens 1, whose time to first token holds the same
// simulated prefill plus the frontend's whole request path. The mocker's
// timing model gives the bare simulated time to the first token too
// (prefill and the first decode pass, which the mocker runs in one pass).
//
//	go test -run '^$' -bench MigrationGap -benchtime 20x ./test/e2e/
func BenchmarkMigrationGap(b *testing.B) {
	for _, plane := range []string{"tcp", "nats"} {
		// The processes belong to the parent, so that the runs with
		// growing b.N share them.
		f := startGapCluster(b, plane)
		b.Run(plane, func(b *testing.B) { benchmarkMigrationGap(b, f) })
	}
}

const (
	gapPrompt     = 128 // prompt tokens
	gapEvery      = 20  // the worker drops each stream after this many tokens
	gapMigrations = 10  // migrations per request
	gapMaxTokens  = gapEvery*gapMigrations + 5
)

func startGapCluster(b *testing.B, plane string) *frontend {
	c := newCluster(b, "etcd", plane)
	for i := range 2 {
		c.startMocker(fmt.Sprintf("mocker-%d", i), []string{"--speedup-ratio", "1",
			"--drop-after-tokens", fmt.Sprint(gapEvery), "--no-enable-prefix-caching"})
	}
	// A dropped stream reports its worker down; the workers are healthy
	// here, so let them back at once.
	f := c.startFrontendArgs([]string{"--migration-limit", "1000"}, "DYN_RUNTIME_INHIBITED_DURATION_SECS=0.001")
	f.waitModels(b, "demo")
	return f
}

func benchmarkMigrationGap(b *testing.B, f *frontend) {
	var gaps, itls, ttfts, added, overModel, lengths []float64
	run := func(i int, measure bool) {
		s := f.startStream(b, complPath, gapRequest(i, gapPrompt, gapMaxTokens))
		got := reassemble(b, complPath, s.finish(b, 60*time.Second))
		var content []time.Time
		for _, e := range s.seen {
			if e.content() {
				content = append(content, e.at)
			}
		}
		// One chunk per token, so chunk k is token k and the stream broke
		// between chunks j*gapEvery-1 and j*gapEvery.
		if got.usage == nil || got.usage.CompletionTokens != gapMaxTokens || got.usage.PromptTokens != gapPrompt || len(content) != gapMaxTokens {
			b.Fatalf("request %d: usage %+v, %d chunks with text; want %d prompt tokens and %d completion tokens, one chunk each",
				i, got.usage, len(content), gapPrompt, gapMaxTokens)
		}
		if !measure {
			return
		}
		for k := 1; k < len(content); k++ {
			d := ms(content[k].Sub(content[k-1]))
			if k%gapEvery != 0 {
				itls = append(itls, d)
				continue
			}
			// The fresh request with the re-issued prompt's length.
			n := gapPrompt + k
			fresh := f.startStream(b, complPath, gapRequest(i, n, 1))
			fresh.finish(b, 10*time.Second)
			first := slices.IndexFunc(fresh.seen, timedEvent.content)
			if first < 0 {
				b.Fatalf("a fresh request of %d prompt tokens got no text", n)
			}
			ttft := ms(fresh.seen[first].at.Sub(fresh.sent))
			gaps = append(gaps, d)
			ttfts = append(ttfts, ttft)
			added = append(added, d-ttft)
			overModel = append(overModel, d-ms(modelFirstToken(n)))
			lengths = append(lengths, float64(n))
		}
	}
	run(0, false) // warm up connections
	before := f.migrations(b)
	b.ResetTimer()
	for i := range b.N {
		run(i, true)
	}
	b.StopTimer()
	if after := f.migrations(b); after.ongoing-before.ongoing != float64(gapMigrations*b.N) || after.cannot != before.cannot {
		b.Fatalf("%v mid-stream migrations and %d \"Cannot recreate stream\" lines, want %d and 0",
			after.ongoing-before.ongoing, after.cannot-before.cannot, gapMigrations*b.N)
	}
	for _, m := range []struct {
		name string
		xs   []float64
	}{
		{"gap", gaps},                // last chunk before the failure -> first after
		{"ttft", ttfts},              // fresh request, same prompt length
		{"gap-ttft", added},          // paired, same run
		{"gap-simulated", overModel}, // gap - simulated prefill and first pass
	} {
		b.ReportMetric(pct(m.xs, 50), m.name+"-p50-ms")
		b.ReportMetric(pct(m.xs, 99), m.name+"-p99-ms")
	}
	b.ReportMetric(pct(itls, 50), "itl-p50-ms")
	b.Logf("%d migrations; re-prefill of %v-%v tokens, simulated %.1f-%.1f ms (prefill + first decode pass)",
		len(gaps), slices.Min(lengths), slices.Max(lengths), ms(modelFirstToken(gapPrompt+gapEvery)), ms(modelFirstToken(gapPrompt+gapEvery*gapMigrations)))
}

// gapRequest is a streamed completion whose prompt is n token ids; i
// varies the ids from request to request.
func gapRequest(i, n, maxTokens int) object {
	ids := make([]int, n)
	for k := range ids {
		ids[k] = 100 + (i*7+k*13)%300
	}
	return object{"model": "demo", "prompt": ids, "max_tokens": maxTokens, "stream": true,
		"stream_options": object{"include_usage": true}}
}

// modelFirstToken is the simulated time, at speedup 1, from a request
// with n uncached prompt tokens reaching an idle mocker to its first
// token (pkg/mocker/timing.go and scheduler.go): the first pass prefills
// the prompt, 4.209989e-07·n² + 1.518344e-02·n + 16.50142 ms, and decodes
// the first token in the same pass, max(1, −25.74·p² + 54.01·p + 5.74) ms
// with p the fraction of the KV cache in use (here below 0.001, so 5.74).
func modelFirstToken(n int) time.Duration {
	x := float64(n)
	return time.Duration((4.209989e-07*x*x + 1.518344e-02*x + 16.50142 + 5.74) * float64(time.Millisecond))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// pct is the p-th percentile of xs (nearest rank).
func pct(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	i := int(float64(len(s))*p/100+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
