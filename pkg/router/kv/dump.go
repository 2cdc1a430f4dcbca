package kv

import (
	"cmp"
	"slices"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

// Dump returns the tree as single-block stored events (spec §3.4): a
// breadth-first walk from the root emitting, for every reachable node and
// every worker caching it, a stored event whose parent is the parent
// node's block hash (nil under the root), with event ids counting from 0.
// Replaying the events into an empty indexer reproduces every worker's
// matches. Children are visited in tokens-hash order and workers in
// (id, dp rank) order, so equal trees dump equally. Dump runs concurrently
// with Apply; it is not an atomic snapshot of a tree that is changing.
// Blocks a worker caches below a block it does not cache (unreachable for
// matching) are not dumped.
func (x *indexer) Dump() []kvblock.RouterEvent {
	type item struct {
		n      *node
		tok    uint64
		parent *uint64
	}
	var (
		out     []kvblock.RouterEvent
		queue   []item
		kids    []edge
		idxs    []uint32
		workers []Worker
	)
	visit := func(n *node, parent *uint64) {
		kids = kids[:0]
		n.mu.RLock()
		kids = n.appendChildren(kids)
		idxs = append(idxs[:0], n.workers...)
		n.mu.RUnlock()
		slices.SortFunc(kids, func(a, b edge) int { return cmp.Compare(a.tok, b.tok) })
		for _, k := range kids {
			queue = append(queue, item{k.node, k.tok, parent})
		}
	}
	seen := map[*node]bool{x.root: true}
	visit(x.root, nil)
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		if seen[it.n] {
			continue
		}
		seen[it.n] = true
		hash := it.n.hash
		visit(it.n, &hash)

		workers = workers[:0]
		byIndex := x.reg.Load().byIndex
		for _, idx := range idxs {
			if ws := byIndex[idx]; ws != nil {
				workers = append(workers, ws.w)
			}
		}
		slices.SortFunc(workers, cmpWorker)
		for _, w := range workers {
			out = append(out, kvblock.RouterEvent{
				WorkerID: w.ID,
				Event: kvblock.KVCacheEvent{
					EventID: uint64(len(out)),
					DPRank:  w.DPRank,
					Data:    kvblock.Stored(it.parent, kvblock.StoredBlock{BlockHash: hash, TokensHash: it.tok}),
				},
			})
		}
	}
	return out
}
