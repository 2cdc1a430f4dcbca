package kv

import "slices"

// matches is the result of a prefix match (spec §3.2) in storage the
// caller owns: indexer.FindMatchesInto overwrites it. Once its arrays have
// grown to the indexer's worker count, refilling it allocates nothing, so
// a caller that reuses one (per goroutine, or from a sync.Pool) matches
// without allocating. It holds what FindMatches returns as overlapScores:
// for each worker that caches at least the request's first block, the
// number of leading blocks it caches and its tree size, read by Overlap.
//
// The zero value is an empty result, ready to be filled. A matches is not
// safe for concurrent use, and its content is valid until the next
// FindMatchesInto into it.
type matches struct {
	reg   *registry   // the workers the result refers to; nil: no result
	stamp uint32      // the slots stamped with it form the current result
	slots []matchSlot // by dense worker index
	n     int         // workers with a score

	// The tree walk's working space.
	active []uint32 // workers matching every block so far, sorted
	done   []scored // workers that stopped matching, with their depth
}

// matchSlot is one worker's entry in a matches.
type matchSlot struct {
	stamp uint32 // valid iff equal to Matches.stamp
	depth uint32
	size  int
}

// scored is a worker index and its prefix depth.
type scored struct {
	idx, depth uint32
}

var _ overlaps = (*matches)(nil)

// Overlap returns w's overlap score (the number of leading blocks of the
// request it caches) and its tree size (the blocks it caches in all), or
// 0 and 0 for a worker without a score. A nil *matches has no scores.
func (m *matches) Overlap(w Worker) (score uint32, treeSize int) {
	if m == nil || m.reg == nil {
		return 0, 0
	}
	ws := m.reg.byKey[w]
	if ws == nil {
		return 0, 0
	}
	if s := &m.slots[ws.idx]; s.stamp == m.stamp {
		return s.depth, s.size
	}
	return 0, 0
}

// Len returns the number of workers with a score.
func (m *matches) Len() int { return m.n }

// release drops m's reference to the indexer's registry, for a matches
// about to sit in a pool.
func (m *matches) release() { m.reg = nil }

// reset empties m for a new result.
func (m *matches) reset() {
	m.reg, m.n = nil, 0
	m.stamp++
	if m.stamp == 0 { // wrapped: old stamps could match again
		clear(m.slots)
		m.stamp = 1
	}
	m.active, m.done = m.active[:0], m.done[:0]
}

// fill records the walk's scores (m.done) of the workers registered in
// reg, with their current tree sizes.
func (m *matches) fill(reg *registry) {
	m.reg = reg
	if n := len(reg.byIndex); len(m.slots) < n {
		m.slots = slices.Grow(m.slots, n-len(m.slots))[:n]
	}
	for _, d := range m.done {
		if int(d.idx) >= len(reg.byIndex) {
			continue
		}
		if ws := reg.byIndex[d.idx]; ws != nil {
			m.slots[d.idx] = matchSlot{stamp: m.stamp, depth: d.depth, size: int(ws.size.Load())}
			m.n++
		}
	}
}
