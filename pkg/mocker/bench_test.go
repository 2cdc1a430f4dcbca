package mocker

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// BenchmarkSchedulerStep measures the CPU cost of one scheduler pass
// (rank.step plus handing the tokens to their streams, without sleeping)
// in steady-state decode with 1, 64 and 256 running sequences of a
// 512-token prompt; finished sequences are replaced by new ones outside
// the timer. It reports ns/seq: the cost per running sequence per pass.
//
//	go test -run '^$' -bench SchedulerStep -benchmem ./pkg/mocker/
func BenchmarkSchedulerStep(b *testing.B) {
	for _, n := range []int{1, 64, 256} {
		b.Run(fmt.Sprintf("seqs=%d", n), func(b *testing.B) {
			e, err := New(DefaultConfig())
			if err != nil {
				b.Fatal(err)
			}
			r := e.ranks[0]
			next := 0
			add := func() {
				req := request(prompt(next*1000, 512), 1024, int64(next))
				next++
				r.submit(e.newSequence(req, 1024))
			}
			for range n {
				add()
			}
			for len(r.waiting)+len(r.prefill) > 0 { // warm up: prefill everything
				r.step()
				r.takeOutputs()
			}
			var buf []uint32
			b.ResetTimer()
			for b.Loop() {
				r.step()
				outs := r.takeOutputs()
				deliver(outs)
				for _, d := range outs {
					buf, _, _ = d.out.take(buf)
				}
				if missing := n - len(r.decode) - len(r.prefill) - len(r.waiting); missing > 0 {
					b.StopTimer()
					for range missing {
						add()
					}
					b.StartTimer()
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/seq")
		})
	}
}

// BenchmarkEngineTokens measures the whole path of a token through a
// started engine: scheduler pass, stream hand-off, the Generate goroutine
// waking up and calling a no-op emit, with 64 concurrent requests and a
// speedup ratio so high that passes do not sleep. It reports ns/token.
//
//	go test -run '^$' -bench EngineTokens ./pkg/mocker/
func BenchmarkEngineTokens(b *testing.B) {
	const streams, tokens = 64, 256
	cfg := DefaultConfig()
	cfg.SpeedupRatio = 1e9
	e, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e.Start(b.Context(), 1); err != nil {
		b.Fatal(err)
	}
	defer e.Cleanup(b.Context())
	emit := func(*backend.Output) error { return nil }
	total := 0
	for b.Loop() {
		var wg sync.WaitGroup
		for i := range streams {
			wg.Go(func() {
				if err := e.Generate(context.Background(), request(prompt(i*100, 64), tokens, 0), emit); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		total += streams * tokens
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(total), "ns/token")
}
