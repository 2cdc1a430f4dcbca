package kv

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

// refModel is the naive reference the indexer is checked against: per
// worker, the set of sequence hashes it caches. A request's score for a
// worker is found by brute force: chain the request's local hashes and
// count how many leading sequence hashes the worker holds.
type refModel struct {
	held map[Worker]map[uint64]bool
	info map[uint64]refBlock // every sequence hash ever made
}

// refBlock is where a sequence hash sits in the prompt tree.
type refBlock struct {
	parent uint64
	root   bool
	local  uint64
	depth  int
}

func newRefModel() *refModel {
	return &refModel{held: map[Worker]map[uint64]bool{}, info: map[uint64]refBlock{}}
}

func (m *refModel) register(w Worker) map[uint64]bool {
	h := m.held[w]
	if h == nil {
		h = map[uint64]bool{}
		m.held[w] = h
	}
	return h
}

// store mirrors a stored event whose block hashes are chained from the
// parent: every block is added unless the parent is unknown.
func (m *refModel) store(w Worker, parent *uint64, blocks []kvblock.StoredBlock) error {
	h := m.register(w)
	if parent != nil && !h[*parent] {
		return errParentBlockNotFound
	}
	prev, root, depth := uint64(0), true, 0
	if parent != nil {
		prev, root, depth = *parent, false, m.info[*parent].depth+1
	}
	for _, b := range blocks {
		m.info[b.BlockHash] = refBlock{parent: prev, root: root, local: b.TokensHash, depth: depth}
		h[b.BlockHash] = true
		prev, root = b.BlockHash, false
		depth++
	}
	return nil
}

func (m *refModel) remove(w Worker, hashes []uint64) error {
	h := m.register(w)
	var err error
	for _, x := range hashes {
		if !h[x] {
			if err == nil {
				err = errBlockNotFound
			}
			continue
		}
		delete(h, x)
	}
	return err
}

func (m *refModel) clear(w Worker) { m.held[w] = map[uint64]bool{} }

func (m *refModel) removeWorker(id uint64) {
	for w := range m.held {
		if w.ID == id {
			delete(m.held, w)
		}
	}
}

// descendants returns the hashes w holds strictly below b.
func (m *refModel) descendants(w Worker, b uint64) []uint64 {
	var out []uint64
	for x := range m.held[w] {
		for i := m.info[x]; !i.root; i = m.info[i.parent] {
			if i.parent == b {
				out = append(out, x)
				break
			}
		}
	}
	return out
}

// path returns the local hashes from the root down to b.
func (m *refModel) path(b uint64) []uint64 {
	var out []uint64
	for {
		i := m.info[b]
		out = append(out, i.local)
		if i.root {
			break
		}
		b = i.parent
	}
	slices.Reverse(out)
	return out
}

func (m *refModel) matches(local []uint64) overlapScores {
	o := overlapScores{Scores: map[Worker]uint32{}, TreeSizes: map[Worker]int{}}
	seq := kvblock.SeqHashes(local)
	for w, h := range m.held {
		n := 0
		for n < len(seq) && h[seq[n]] {
			n++
		}
		if n > 0 {
			o.Scores[w] = uint32(n)
			o.TreeSizes[w] = len(h)
		}
	}
	return o
}

func (m *refModel) size() int {
	n := 0
	for _, h := range m.held {
		n += len(h)
	}
	return n
}

func (m *refModel) workers() []Worker {
	out := make([]Worker, 0, len(m.held))
	for w := range m.held {
		out = append(out, w)
	}
	slices.SortFunc(out, cmpWorker)
	return out
}

// eventGen makes random event streams over a fixed set of workers, keeping
// a reference model in step. Local hashes come from a small alphabet so
// that workers share prefixes. With prefixClosed, removing a block also
// removes (in the same event, in random order) every block the worker
// holds below it, as an engine evicting leaves first would end up doing;
// otherwise single random blocks are removed, leaving unreachable
// descendants behind.
type eventGen struct {
	rng          *rand.Rand
	m            *refModel
	workers      []Worker
	alphabet     int
	maxDepth     int
	prefixClosed bool
	catalog      []uint64 // sequence hashes ever stored, for parents and queries
}

func newEventGen(seed uint64, workers []Worker, prefixClosed bool) *eventGen {
	return &eventGen{
		rng:          rand.New(rand.NewPCG(seed, seed^0x5eed)),
		m:            newRefModel(),
		workers:      workers,
		alphabet:     4,
		maxDepth:     12,
		prefixClosed: prefixClosed,
	}
}

// indexerOps is what the generator drives: an indexer, possibly wrapped.
type indexerOps interface {
	Apply(ctx context.Context, ev kvblock.RouterEvent) error
	ClearWorker(w Worker)
	RemoveWorker(id uint64)
}

// step makes one random mutation, applies it to x and to the model, and
// reports a mismatch of the error class.
func (g *eventGen) step(t testing.TB, x indexerOps) {
	t.Helper()
	w := g.workers[g.rng.IntN(len(g.workers))]
	held := g.heldList(w)
	var ev kvblock.RouterEvent
	var want error
	switch r := g.rng.IntN(100); {
	case r < 50: // store, extending one of w's blocks or from the root
		var parent *uint64
		depth := 0
		if len(held) > 0 && g.rng.IntN(10) < 7 {
			p := held[g.rng.IntN(len(held))]
			parent, depth = &p, g.m.info[p].depth+1
		}
		n := 1 + g.rng.IntN(6)
		n = max(1, min(n, g.maxDepth-depth))
		locals := make([]uint64, n)
		for i := range locals {
			locals[i] = g.local()
		}
		var blocks []kvblock.StoredBlock
		if parent == nil {
			blocks = chainBlocks(0, false, locals...)
		} else {
			blocks = chainBlocks(*parent, true, locals...)
		}
		ev = storedEv(w, parent, blocks...)
		want = g.m.store(w, parent, blocks)
		for _, b := range blocks {
			g.catalog = append(g.catalog, b.BlockHash)
		}
	case r < 55: // store under a block w may not hold
		if len(g.catalog) == 0 {
			return
		}
		p := g.catalog[g.rng.IntN(len(g.catalog))]
		blocks := chainBlocks(p, true, g.local())
		ev = storedEv(w, &p, blocks...)
		if want = g.m.store(w, &p, blocks); want == nil {
			g.catalog = append(g.catalog, blocks[0].BlockHash)
		}
	case r < 82: // remove
		var hashes []uint64
		if len(held) > 0 {
			b := held[g.rng.IntN(len(held))]
			hashes = append(hashes, b)
			if g.prefixClosed {
				hashes = append(hashes, g.m.descendants(w, b)...)
			} else if len(held) > 1 && g.rng.IntN(3) == 0 {
				hashes = append(hashes, held[g.rng.IntN(len(held))])
			}
			g.rng.Shuffle(len(hashes), func(i, j int) { hashes[i], hashes[j] = hashes[j], hashes[i] })
			hashes = slices.Compact(hashes)
		}
		if len(hashes) == 0 || g.rng.IntN(10) == 0 {
			hashes = append(hashes, g.rng.Uint64()) // unknown
		}
		ev = removedEv(w, hashes...)
		want = g.m.remove(w, hashes)
	case r < 90:
		ev = clearedEv(w)
		g.m.register(w)
		g.m.clear(w)
	case r < 95:
		x.ClearWorker(w)
		g.m.register(w)
		g.m.clear(w)
		return
	default:
		x.RemoveWorker(w.ID)
		g.m.removeWorker(w.ID)
		return
	}
	got := x.Apply(context.Background(), ev)
	if (got == nil) != (want == nil) || (want != nil && !errors.Is(got, want)) {
		t.Fatalf("Apply(%+v) = %v, want %v", ev, got, want)
	}
}

// local returns a random local hash from the alphabet (offset so that
// it is never 0).
func (g *eventGen) local() uint64 { return 100 + uint64(g.rng.IntN(g.alphabet)) }

// heldList returns w's blocks in the model, sorted for determinism.
func (g *eventGen) heldList(w Worker) []uint64 {
	var out []uint64
	for h := range g.m.held[w] {
		out = append(out, h)
	}
	slices.Sort(out)
	return out
}

// query returns a random request: the path to a known block, perhaps
// extended, cut or altered, or random hashes.
func (g *eventGen) query() []uint64 {
	if len(g.catalog) == 0 || g.rng.IntN(5) == 0 {
		q := make([]uint64, 1+g.rng.IntN(g.maxDepth))
		for i := range q {
			q[i] = g.local()
		}
		return q
	}
	from := g.catalog[g.rng.IntN(len(g.catalog))]
	if held := g.heldList(g.workers[g.rng.IntN(len(g.workers))]); len(held) > 0 && g.rng.IntN(2) == 0 {
		from = held[g.rng.IntN(len(held))] // something cached, for deep matches
	}
	q := g.m.path(from)
	for range g.rng.IntN(3) {
		q = append(q, g.local())
	}
	if g.rng.IntN(4) == 0 {
		q[g.rng.IntN(len(q))] = g.local()
	}
	if g.rng.IntN(4) == 0 {
		q = q[:1+g.rng.IntN(len(q))]
	}
	return q
}

// testWorkers returns n ids with two dp ranks each.
func testWorkers(base uint64, n int) []Worker {
	var out []Worker
	for i := range n {
		out = append(out, Worker{ID: base + uint64(i)}, Worker{ID: base + uint64(i), DPRank: 1})
	}
	return out
}
