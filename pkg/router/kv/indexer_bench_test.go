package kv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

// Benchmark workload: 64-block prompts, each a 16-block prefix shared by
// many prompts (one of 32 "system prompts") followed by 48 blocks of its
// own.
const (
	benchBlocks  = 64
	benchShared  = 16
	benchSystems = 32
	benchPrompts = 8192
	benchHeld    = 8 // prompts per worker in BenchmarkApplyStored's churn
)

// benchPrompt is one prompt's local and sequence hashes.
type benchPrompt struct {
	local, seq []uint64
}

func benchPool() []benchPrompt {
	rng := rand.New(rand.NewPCG(1, 2))
	systems := make([][]uint64, benchSystems)
	for i := range systems {
		systems[i] = make([]uint64, benchShared)
		for j := range systems[i] {
			systems[i][j] = rng.Uint64()
		}
	}
	pool := make([]benchPrompt, benchPrompts)
	for i := range pool {
		local := slices.Clone(systems[i%benchSystems])
		for len(local) < benchBlocks {
			local = append(local, rng.Uint64())
		}
		pool[i] = benchPrompt{local: local, seq: kvblock.SeqHashes(local)}
	}
	return pool
}

// store returns the stored event of p for w.
func (p benchPrompt) store(w Worker) kvblock.RouterEvent {
	blocks := make([]kvblock.StoredBlock, len(p.local))
	for i := range p.local {
		blocks[i] = kvblock.StoredBlock{BlockHash: p.seq[i], TokensHash: p.local[i]}
	}
	return storedEv(w, nil, blocks...)
}

// evict returns the removed event of p's own (unshared) blocks for w,
// deepest first as an engine evicts.
func (p benchPrompt) evict(w Worker) kvblock.RouterEvent {
	hashes := slices.Clone(p.seq[benchShared:])
	slices.Reverse(hashes)
	return removedEv(w, hashes...)
}

// benchChurn is one goroutine's share of the ApplyStored workload: its own
// workers, each storing a new prompt per turn and evicting the one it
// stored benchHeld turns before. It prebuilds the events so the benchmark
// measures Apply only.
type benchChurn struct {
	x      *indexer
	events []kvblock.RouterEvent // store, evict, store, evict...
	next   int
}

func newBenchChurn(x *indexer, pool []benchPrompt, workers []Worker) *benchChurn {
	// Worker wi's turn j stores prompt j mod 2H of its own 2H prompts
	// and evicts prompt j-H, so after a warm-up of H stores the 2H turns
	// j = H..3H-1 bring every worker back to the state they started in:
	// the events can be replayed for as long as b.N needs.
	const h = benchHeld
	prompt := func(wi, j int) benchPrompt { return pool[(wi*131+j%(2*h))%len(pool)] }
	c := &benchChurn{x: x}
	for wi, w := range workers {
		for j := range h {
			_ = x.Apply(context.Background(), prompt(wi, j).store(w))
		}
	}
	for j := h; j < 3*h; j++ {
		for wi, w := range workers {
			c.events = append(c.events, prompt(wi, j).store(w), prompt(wi, j-h).evict(w))
		}
	}
	return c
}

// turn applies one store and one eviction and returns the blocks they
// carried.
func (c *benchChurn) turn() int {
	s, e := c.events[c.next], c.events[c.next+1]
	c.next = (c.next + 2) % len(c.events)
	_ = c.x.Apply(context.Background(), s)
	_ = c.x.Apply(context.Background(), e)
	return len(s.Event.Data.Stored.Blocks) + len(e.Event.Data.Removed.BlockHashes)
}

// BenchmarkApplyStored measures event throughput: each op stores a
// 64-block prompt for one worker (16 shared blocks, 48 new) and evicts the
// 48 own blocks of the prompt that worker stored 8 turns earlier, so the
// tree stays at a steady size. block-events/s counts stored plus removed
// blocks. The parallel variant applies different workers' events from
// GOMAXPROCS goroutines.
func BenchmarkApplyStored(b *testing.B) {
	pool := benchPool()
	for _, nw := range []int{100, 1000} {
		b.Run(fmt.Sprintf("workers=%d", nw), func(b *testing.B) {
			x := newIndexer(indexerOptions{})
			c := newBenchChurn(x, pool, testWorkerRange(0, nw))
			blocks := 0
			b.ResetTimer()
			for b.Loop() {
				blocks += c.turn()
			}
			b.ReportMetric(float64(blocks)/b.Elapsed().Seconds(), "block-events/s")
		})
		b.Run(fmt.Sprintf("workers=%d/parallel", nw), func(b *testing.B) {
			x := newIndexer(indexerOptions{})
			procs := runtime.GOMAXPROCS(0)
			churns := make([]*benchChurn, procs)
			for g := range churns {
				// Each goroutine owns a disjoint slice of the workers.
				churns[g] = newBenchChurn(x, pool, testWorkerRange(g*nw/procs, (g+1)*nw/procs))
			}
			var nextG, blocks atomic.Int64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				c := churns[int(nextG.Add(1)-1)%procs]
				n := 0
				for pb.Next() {
					n += c.turn()
				}
				blocks.Add(int64(n))
			})
			b.ReportMetric(float64(blocks.Load())/b.Elapsed().Seconds(), "block-events/s")
		})
	}
}

// BenchmarkFindMatches measures query latency: every worker holds 32
// random prompts of the pool (so the 32 shared prefixes are held by most
// workers and each prompt by a few), and each query is a random pool
// prompt, a third of them with the tail replaced by unknown blocks from
// a random point. It reports the p50 and p99 of the per-query latency.
// Queries go through FindMatchesInto with one reused matches, as the
// router does; the maps variant calls FindMatches, which builds the
// overlapScores maps. The under-load variant applies ApplyStored's churn
// from another goroutine at the same time.
//
//	go test -run '^$' -bench FindMatches -benchmem -benchtime 2s ./pkg/router/kv/
func BenchmarkFindMatches(b *testing.B) {
	pool := benchPool()
	for _, nw := range []int{100, 1000} {
		for _, v := range []string{"", "/under-load", "/maps"} {
			load, maps := v == "/under-load", v == "/maps"
			b.Run(fmt.Sprintf("workers=%d%s", nw, v), func(b *testing.B) {
				x := newIndexer(indexerOptions{})
				rng := rand.New(rand.NewPCG(3, 4))
				for _, w := range testWorkerRange(0, nw) {
					for range 32 {
						_ = x.Apply(context.Background(), pool[rng.IntN(len(pool))].store(w))
					}
				}
				queries := make([][]uint64, 1024)
				for i := range queries {
					q := slices.Clone(pool[rng.IntN(len(pool))].local)
					if i%3 == 0 {
						for j := rng.IntN(benchBlocks); j < benchBlocks; j++ {
							q[j] = rng.Uint64()
						}
					}
					queries[i] = q
				}
				stop := make(chan struct{})
				stopped := make(chan struct{})
				if load {
					c := newBenchChurn(x, pool, testWorkerRange(nw, nw+100))
					go func() {
						defer close(stopped)
						for {
							select {
							case <-stop:
								return
							default:
								c.turn()
							}
						}
					}()
				} else {
					close(stopped)
				}
				lat := make([]time.Duration, 0, 1<<16)
				var m matches
				i := 0
				b.ResetTimer()
				for b.Loop() {
					q := queries[i%len(queries)]
					t0 := time.Now()
					if maps {
						_ = x.FindMatches(q)
					} else {
						x.FindMatchesInto(&m, q)
					}
					d := time.Since(t0)
					if len(lat) < cap(lat) {
						lat = append(lat, d)
					}
					i++
				}
				b.StopTimer()
				close(stop)
				<-stopped
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
				b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
			})
		}
	}
}

// testWorkerRange returns workers with ids lo..hi-1 (dp rank 0).
func testWorkerRange(lo, hi int) []Worker {
	out := make([]Worker, 0, hi-lo)
	for i := lo; i < hi; i++ {
		out = append(out, Worker{ID: uint64(i) + 1})
	}
	return out
}
