package kv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// mapsFindMatches is FindMatches as it was before matches: the same walk,
// with the result built in maps straight from the registry. The tests
// below check the new path against it.
func mapsFindMatches(x *indexer, local []uint64) overlapScores {
	if len(local) == 0 {
		return overlapScores{Scores: map[Worker]uint32{}, TreeSizes: map[Worker]int{}}
	}
	var active []uint32
	var done []scored
	n := x.root.child(local[0])
	var fp uint64
	depth := uint32(0)
	for i := 0; n != nil; i++ {
		switch {
		case i == 0:
			active, fp = append(active, n.workers...), n.fp
		case len(n.workers) != len(active) || n.fp != fp:
			active, done, fp = keepMatching(active, n.workers, done, depth, fp)
		}
		var next *node
		if len(active) > 0 && i+1 < len(local) {
			next = n.child(local[i+1])
		}
		if len(active) == 0 {
			break
		}
		depth++
		n = next
	}
	for _, idx := range active {
		done = append(done, scored{idx, depth})
	}
	res := overlapScores{Scores: make(map[Worker]uint32, len(done)), TreeSizes: make(map[Worker]int, len(done))}
	byIndex := x.reg.Load().byIndex
	for _, d := range done {
		if ws := byIndex[d.idx]; ws != nil {
			res.Scores[ws.w] = d.depth
			res.TreeSizes[ws.w] = int(ws.size.Load())
		}
	}
	return res
}

// matchesScores returns m's result as maps.
func matchesScores(m *matches) overlapScores {
	o := overlapScores{Scores: map[Worker]uint32{}, TreeSizes: map[Worker]int{}}
	if m.reg == nil {
		return o
	}
	for idx, s := range m.slots {
		if s.stamp == m.stamp {
			w := m.reg.byIndex[idx].w
			o.Scores[w], o.TreeSizes[w] = s.depth, s.size
		}
	}
	return o
}

// checkSameMatches compares m (just filled for q) and FindMatches(q) with
// mapsFindMatches(q): every worker of ws (and one never seen) has the same
// score and tree size, and the counts agree.
func checkSameMatches(t *testing.T, step int, x *indexer, m *matches, q []uint64, ws []Worker) {
	t.Helper()
	want := mapsFindMatches(x, q)
	if diff := cmp.Diff(want, matchesScores(m)); diff != "" {
		t.Fatalf("step %d: FindMatchesInto(%v) (-maps +matches):\n%s", step, q, diff)
	}
	if diff := cmp.Diff(want, x.FindMatches(q)); diff != "" {
		t.Fatalf("step %d: FindMatches(%v) (-maps +got):\n%s", step, q, diff)
	}
	if m.Len() != len(want.Scores) {
		t.Fatalf("step %d: Len = %d, want %d", step, m.Len(), len(want.Scores))
	}
	for _, w := range append(ws, Worker{ID: math.MaxUint64}) {
		gs, gt := m.Overlap(w)
		if ws, wt := want.Overlap(w); gs != ws || gt != wt {
			t.Fatalf("step %d: Overlap(%v) = %d, %d; maps %d, %d", step, w, gs, gt, ws, wt)
		}
	}
}

// TestMatchesAgreeWithMaps drives random event streams (with workers
// removed and registered again, so the dense indexes grow) and checks
// every query through one reused matches against the map-building
// FindMatches of before.
func TestMatchesAgreeWithMaps(t *testing.T) {
	for _, tc := range []struct {
		workers, steps int
		prefixClosed   bool
	}{
		{8, 4000, true}, {8, 4000, false}, {60, 1500, true},
	} {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("workers=%d/closed=%v/seed=%d", 2*tc.workers, tc.prefixClosed, seed), func(t *testing.T) {
				g := newEventGen(200+seed, testWorkers(1, tc.workers), tc.prefixClosed)
				x := newIndexer(indexerOptions{})
				var m matches
				for step := range tc.steps {
					g.step(t, x)
					for range 2 {
						q := g.query()
						x.FindMatchesInto(&m, q)
						checkSameMatches(t, step, x, &m, q, g.workers)
					}
				}
				x.FindMatchesInto(&m, nil)
				checkSameMatches(t, -1, x, &m, nil, g.workers)
			})
		}
	}
}

// TestMatchesStampWraps: a matches reused across the wrap of its stamp
// counter does not resurrect old entries.
func TestMatchesStampWraps(t *testing.T) {
	g := newEventGen(7, testWorkers(1, 8), true)
	x := newIndexer(indexerOptions{})
	for range 500 {
		g.step(t, x)
	}
	var m matches
	m.stamp = math.MaxUint32 - 3
	for step := range 200 {
		q := g.query()
		x.FindMatchesInto(&m, q)
		checkSameMatches(t, step, x, &m, q, g.workers)
	}
}

// TestMatchesZeroValue: a zero or nil matches has no scores.
func TestMatchesZeroValue(t *testing.T) {
	var m matches
	var nilM *matches
	w := Worker{ID: 1}
	for _, o := range []overlaps{&m, nilM, overlapScores{}} {
		if s, n := o.Overlap(w); s != 0 || n != 0 {
			t.Errorf("%T.Overlap = %d, %d; want 0, 0", o, s, n)
		}
	}
	if m.Len() != 0 {
		t.Errorf("Len = %d", m.Len())
	}
}

// TestSelectMatchesEqualsMaps: the scheduler decides the same from a
// *matches as from the overlapScores maps (same seeded draws), at
// temperature 0 and above.
func TestSelectMatchesEqualsMaps(t *testing.T) {
	g := newEventGen(11, testWorkers(1, 20), true)
	x := newIndexer(indexerOptions{})
	for range 2000 {
		g.step(t, x)
	}
	cands := append(g.workers, Worker{ID: 999})
	rng := rand.New(rand.NewPCG(1, 1))
	var m matches
	for _, temp := range []float64{0, 0.5} {
		cfg := schedulerConfig{OverlapScoreWeight: 1, Temperature: temp, BlockSize: 4}
		sa, err := newScheduler(cfg, schedulerDeps{Rand: rand.New(rand.NewPCG(2, 2))})
		if err != nil {
			t.Fatal(err)
		}
		sb, _ := newScheduler(cfg, schedulerDeps{Rand: rand.New(rand.NewPCG(2, 2))})
		for i := range 300 {
			q := g.query()
			loads := map[Worker]workerLoad{}
			for _, w := range cands {
				if rng.IntN(4) > 0 {
					loads[w] = workerLoad{ActivePrefillTokens: rng.IntN(8), ActiveBlocks: rng.IntN(8), NewBlocks: rng.IntN(4)}
				}
			}
			x.FindMatchesInto(&m, q)
			req := scheduleRequest{Candidates: cands, ISL: 4 * len(q), Loads: loads}
			req.Overlaps = mapsFindMatches(x, q)
			want, err1 := sa.Select(req)
			req.Overlaps = &m
			got, err2 := sb.Select(req)
			if err1 != nil || err2 != nil {
				t.Fatalf("Select: %v, %v", err1, err2)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("temperature %v, query %d: Select (-maps +matches):\n%s", temp, i, diff)
			}
		}
	}
}

// TestFindMatchesIntoAllocs: refilling a matches that has grown to the
// worker count allocates nothing.
func TestFindMatchesIntoAllocs(t *testing.T) {
	x := newIndexer(indexerOptions{})
	for i := range 64 {
		storeChain(t, x, Worker{ID: uint64(i + 1)}, 1, 2, 3, uint64(4+i%4))
	}
	var m matches
	q := []uint64{1, 2, 3, 5}
	x.FindMatchesInto(&m, q)
	if allocs := testing.AllocsPerRun(100, func() { x.FindMatchesInto(&m, q) }); allocs != 0 {
		t.Errorf("FindMatchesInto: %v allocations per call, want 0", allocs)
	}
	if s, _ := m.Overlap(Worker{ID: 2}); m.Len() != 64 || s != 4 {
		t.Errorf("Len = %d, Overlap(worker 2) = %d; want 64, 4", m.Len(), s)
	}
}
