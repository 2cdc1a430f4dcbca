package kv

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestIndexerMatchesReferenceModel drives random event streams (stores
// extending random chains, removals with their descendants, clears,
// worker removals, failing events) over 16 workers and checks every
// query, the size and the worker list against the brute-force model.
func TestIndexerMatchesReferenceModel(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			g := newEventGen(seed, testWorkers(1, 8), true)
			x := newIndexer(indexerOptions{})
			for step := range 4000 {
				g.step(t, x)
				for range 2 {
					q := g.query()
					if want, got := g.m.matches(q), x.FindMatches(q); !sameScores(want, got) {
						t.Fatalf("step %d: FindMatches(%v) (-model +indexer):\n%s", step, q, cmp.Diff(want, got))
					}
				}
				if got, want := x.Size(), g.m.size(); got != want {
					t.Fatalf("step %d: Size = %d, model %d", step, got, want)
				}
				if want, got := g.m.workers(), x.Workers(); !slices.Equal(want, got) {
					t.Fatalf("step %d: Workers (-model +indexer):\n%s", step, cmp.Diff(want, got))
				}
			}
		})
	}
}

// TestIndexerArbitraryRemovals removes single blocks in the middle of
// chains, which leaves blocks below an emptied node unreachable (spec
// §3.1: the emptied node drops its subtree). The model does not know
// reachability, so scores are only bounded by it, while sizes, tree sizes
// and workers stay exact.
func TestIndexerArbitraryRemovals(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			g := newEventGen(100+seed, testWorkers(1, 8), false)
			x := newIndexer(indexerOptions{})
			for step := range 4000 {
				g.step(t, x)
				q := g.query()
				want, got := g.m.matches(q), x.FindMatches(q)
				for w, s := range got.Scores {
					if s > want.Scores[w] {
						t.Fatalf("step %d: FindMatches(%v): %v scores %d, model only %d", step, q, w, s, want.Scores[w])
					}
					if got.TreeSizes[w] != len(g.m.held[w]) {
						t.Fatalf("step %d: tree size of %v = %d, model %d", step, w, got.TreeSizes[w], len(g.m.held[w]))
					}
				}
				if len(got.TreeSizes) != len(got.Scores) {
					t.Fatalf("step %d: %d tree sizes for %d scores", step, len(got.TreeSizes), len(got.Scores))
				}
				if got, want := x.Size(), g.m.size(); got != want {
					t.Fatalf("step %d: Size = %d, model %d", step, got, want)
				}
				if want, got := g.m.workers(), x.Workers(); !slices.Equal(want, got) {
					t.Fatalf("step %d: Workers (-model +indexer):\n%s", step, cmp.Diff(want, got))
				}
			}
		})
	}
}

// sameScores is a cheap equality check (cmp.Diff explains a mismatch).
func sameScores(a, b overlapScores) bool {
	return maps.Equal(a.Scores, b.Scores) && maps.Equal(a.TreeSizes, b.TreeSizes)
}
