package kv

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/google/go-cmp/cmp"
)

// TestIndexerConcurrent applies different workers' random event streams
// from several goroutines while others query, dump and list workers, then
// checks the final state against the merged reference models (exactly for
// prefix-closed streams; with arbitrary removals scores are bounded by
// the model, as in TestIndexerArbitraryRemovals). Run it with -race.
func TestIndexerConcurrent(t *testing.T) {
	for _, prefixClosed := range []bool{true, false} {
		t.Run(fmt.Sprint("prefixClosed=", prefixClosed), func(t *testing.T) {
			testIndexerConcurrent(t, prefixClosed)
		})
	}
}

func testIndexerConcurrent(t *testing.T, prefixClosed bool) {
	const writers, steps = 4, 1500
	x := newIndexer(indexerOptions{})
	gens := make([]*eventGen, writers)
	for i := range gens {
		// Disjoint workers per goroutine (so each worker's events stay in
		// order); the shared alphabet makes them share tree nodes.
		gens[i] = newEventGen(uint64(i), testWorkers(uint64(100*(i+1)), 3), prefixClosed)
	}

	var wg sync.WaitGroup
	done := make(chan struct{})
	for _, g := range gens {
		wg.Go(func() {
			for range steps {
				g.step(t, x)
			}
		})
	}
	var readers sync.WaitGroup
	for r := range 2 {
		readers.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(r), 99))
			var m matches // reused, as the router does
			for n := 0; ; n++ {
				select {
				case <-done:
					return
				default:
				}
				q := make([]uint64, 1+rng.IntN(12))
				for i := range q {
					q[i] = 100 + uint64(rng.IntN(4))
				}
				o := x.FindMatches(q)
				for w, s := range o.Scores {
					if s < 1 || int(s) > len(q) {
						t.Errorf("FindMatches(%v): %v scores %d", q, w, s)
					}
					if _, ok := o.TreeSizes[w]; !ok {
						t.Errorf("FindMatches(%v): %v has no tree size", q, w)
					}
				}
				x.FindMatchesInto(&m, q)
				for _, g := range gens {
					for _, w := range g.workers {
						if s, _ := m.Overlap(w); int(s) > len(q) {
							t.Errorf("FindMatchesInto(%v): %v scores %d", q, w, s)
						}
					}
				}
				if n%50 == 0 {
					_ = x.Dump()
					_ = x.Workers()
					_ = x.Size()
				}
			}
		})
	}
	wg.Wait()
	close(done)
	readers.Wait()
	if t.Failed() {
		return
	}

	merged := newRefModel()
	for _, g := range gens {
		for w, h := range g.m.held {
			merged.held[w] = h
		}
		for k, v := range g.m.info {
			merged.info[k] = v
		}
	}
	if got, want := x.Size(), merged.size(); got != want {
		t.Errorf("Size = %d, model %d", got, want)
	}
	if diff := cmp.Diff(merged.workers(), x.Workers()); diff != "" {
		t.Errorf("Workers (-model +indexer):\n%s", diff)
	}
	for i := range 2000 {
		g := gens[i%writers]
		g.m = merged // query paths from any goroutine's catalog
		q := g.query()
		want, got := merged.matches(q), x.FindMatches(q)
		if prefixClosed && !sameScores(want, got) {
			t.Fatalf("FindMatches(%v) (-model +indexer):\n%s", q, cmp.Diff(want, got))
		}
		for w, s := range got.Scores {
			if s > want.Scores[w] || got.TreeSizes[w] != len(merged.held[w]) {
				t.Fatalf("FindMatches(%v): %v has %d (tree size %d), model %d (%d)", q, w, s, got.TreeSizes[w], want.Scores[w], len(merged.held[w]))
			}
		}
	}
}

// TestIndexerConcurrentChurnSamePrefix has workers store and evict the
// same chain over and over, so nodes keep emptying (and being unlinked)
// while other workers join them; at the end every worker holds the chain.
func TestIndexerConcurrentChurnSamePrefix(t *testing.T) {
	const workers, rounds = 4, 2000
	x := newIndexer(indexerOptions{})
	chain := []uint64{1, 2, 3, 4}
	seq := kvblock.SeqHashes(chain)
	var wg sync.WaitGroup
	for i := range workers {
		w := Worker{ID: uint64(i + 1)}
		wg.Go(func() {
			for r := range rounds {
				storeChain(t, x, w, chain...)
				if o := x.FindMatches(chain); o.Scores[w] != 4 {
					t.Errorf("round %d: %v scores %d right after storing", r, w, o.Scores[w])
					return
				}
				hashes := slices.Clone(seq)
				if r%2 == 0 {
					slices.Reverse(hashes) // leaves first, or the root first
				}
				mustApply(t, x, removedEv(w, hashes...))
			}
			storeChain(t, x, w, chain...)
		})
	}
	wg.Wait()
	want := overlapScores{Scores: map[Worker]uint32{}, TreeSizes: map[Worker]int{}}
	for i := range workers {
		want.Scores[Worker{ID: uint64(i + 1)}] = 4
		want.TreeSizes[Worker{ID: uint64(i + 1)}] = 4
	}
	checkMatches(t, x, chain, want)
	if x.Size() != 4*workers || len(x.Dump()) != 4*workers {
		t.Errorf("Size = %d, Dump has %d events, want %d", x.Size(), len(x.Dump()), 4*workers)
	}
}
