package kv

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestIndexerConcurrent applies different workers' random event streams
// from several goroutines while others query, dump and list workers, then
// checks the final state against the merged reference models. Run it with
// -race.
func TestIndexerConcurrent(t *testing.T) {
	const writers, steps = 4, 1500
	x := NewIndexer(IndexerOptions{})
	gens := make([]*eventGen, writers)
	for i := range gens {
		// Disjoint workers per goroutine (so each worker's events stay in
		// order); the shared alphabet makes them share tree nodes.
		gens[i] = newEventGen(uint64(i), testWorkers(uint64(100*(i+1)), 3), true)
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
		if diff := cmp.Diff(merged.matches(q), x.FindMatches(q)); diff != "" {
			t.Fatalf("FindMatches(%v) (-model +indexer):\n%s", q, diff)
		}
	}
}
