package kv

import "sync"

// matchScratch is FindMatches' reusable working space.
type matchScratch struct {
	active []uint32 // workers matching every block so far, sorted
	done   []scored // workers that stopped matching, with their depth
}

// scored is a worker index and its prefix depth.
type scored struct {
	idx, depth uint32
}

var matchPool = sync.Pool{New: func() any { return new(matchScratch) }}

// FindMatches returns, for every worker caching the first of the given
// local (tokens) hashes, how many leading hashes it caches in a row, and
// its total cached blocks (spec §3.2, early_exit false). It takes read
// locks only and runs concurrently with Apply.
func (x *Indexer) FindMatches(local []uint64) OverlapScores {
	if len(local) == 0 {
		return OverlapScores{Scores: map[Worker]uint32{}, TreeSizes: map[Worker]int{}}
	}
	s := matchPool.Get().(*matchScratch)
	active, done := s.active[:0], s.done[:0]

	x.root.mu.RLock()
	n := x.root.child(local[0])
	x.root.mu.RUnlock()
	var fp uint64
	depth := uint32(0)
	for i := 0; n != nil; i++ {
		n.mu.RLock()
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
		n.mu.RUnlock()
		if len(active) == 0 {
			break
		}
		depth++
		n = next
	}
	for _, idx := range active {
		done = append(done, scored{idx, depth})
	}

	res := OverlapScores{Scores: make(map[Worker]uint32, len(done)), TreeSizes: make(map[Worker]int, len(done))}
	x.regMu.RLock()
	for _, d := range done {
		if ws := x.byIndex[d.idx]; ws != nil {
			res.Scores[ws.w] = d.depth
			res.TreeSizes[ws.w] = int(ws.size.Load())
		}
	}
	x.regMu.RUnlock()
	s.active, s.done = active, done
	matchPool.Put(s)
	return res
}

// keepMatching removes from active (sorted) the workers not in workers
// (sorted), recording them in done with depth, and returns the new active
// set, done and the active set's fingerprint.
func keepMatching(active, workers []uint32, done []scored, depth uint32, fp uint64) ([]uint32, []scored, uint64) {
	kept, j := active[:0], 0
	for _, a := range active {
		for j < len(workers) && workers[j] < a {
			j++
		}
		if j < len(workers) && workers[j] == a {
			kept = append(kept, a)
			continue
		}
		done = append(done, scored{a, depth})
		fp ^= fingerprint(a)
	}
	return kept, done, fp
}
