package kv

import "sync"

// matchPool holds FindMatches' matches.
var matchPool = sync.Pool{New: func() any { return new(matches) }}

// FindMatches returns, for every worker caching the first of the given
// local (tokens) hashes, how many leading hashes it caches in a row, and
// its total cached blocks (spec §3.2, early_exit false). It takes read
// locks only and runs concurrently with Apply. It allocates the two
// result maps; FindMatchesInto, which the router uses, does not.
func (x *indexer) FindMatches(local []uint64) overlapScores {
	m := matchPool.Get().(*matches)
	m.reset()
	x.walk(m, local)
	o := overlapScores{Scores: make(map[Worker]uint32, len(m.done)), TreeSizes: make(map[Worker]int, len(m.done))}
	byIndex := x.reg.Load().byIndex
	for _, d := range m.done {
		if ws := byIndex[d.idx]; ws != nil {
			o.Scores[ws.w] = d.depth
			o.TreeSizes[ws.w] = int(ws.size.Load())
		}
	}
	matchPool.Put(m)
	return o
}

// FindMatchesInto is FindMatches with the result written into m, which
// it overwrites (see matches): once m has grown to the number of
// registered workers, it allocates nothing.
func (x *indexer) FindMatchesInto(m *matches, local []uint64) {
	m.reset()
	x.walk(m, local)
	// Workers removed during the walk are left out (their index is nil in
	// the registry from then on).
	m.fill(x.reg.Load())
}

// walk matches local down the tree, leaving in m.done every worker that
// caches local[0] with its prefix depth. m has been reset.
func (x *indexer) walk(m *matches, local []uint64) {
	if len(local) == 0 {
		return
	}
	active, done := m.active, m.done

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
	m.active, m.done = active, done
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
