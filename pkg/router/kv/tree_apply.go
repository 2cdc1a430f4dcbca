package kv

import (
	"fmt"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

// The mutations below run with ws.mu held and hold at most one node lock
// at a time (prune holds a parent, then try-locks the child).

// store applies a stored event for ws (spec §3.1).
func (x *Indexer) store(ws *workerState, d *kvblock.StoreData) error {
	start := x.root
	if d.ParentHash != nil {
		p, ok := ws.lookup[*d.ParentHash]
		if !ok {
			return fmt.Errorf("%w: parent %d", ErrParentBlockNotFound, *d.ParentHash)
		}
		start = p
	}
	defer func() { ws.size.Store(int64(len(ws.lookup))) }()

	// cur is the node being worked on. joined means ws is already in it
	// (or it is the root or the parent block); otherwise cur was found
	// under from for blocks[i-1] and ws joins it now.
	cur, from, joined := start, start, true
	for i := 0; ; {
		cur.mu.Lock()
		if !joined {
			if cur.unlinked.Load() {
				// Pruned between finding it and locking it: find
				// blocks[i-1] under from again.
				cur.mu.Unlock()
				cur, joined = from, true
				i--
				continue
			}
			cur.addWorker(ws.idx, ws.fp)
		}
		var next *node
		var err error
		if i < len(d.Blocks) {
			next, err = resolveChild(ws, cur, d.Blocks[i])
		}
		cur.mu.Unlock()
		if !joined {
			x.setLookup(ws, d.Blocks[i-1].BlockHash, cur)
		}
		if err != nil || next == nil {
			return err
		}
		from, cur, joined = cur, next, false
		i++
	}
}

// resolveChild returns cur's child for b, linking a reused or new node if
// there is none. cur.mu is held.
func resolveChild(ws *workerState, cur *node, b kvblock.StoredBlock) (*node, error) {
	if c := cur.child(b.TokensHash); c != nil {
		// The reference warns when c.hash != b.BlockHash (engines should
		// hash uniformly) and uses c anyway.
		return c, nil
	}
	c := ws.lookup[b.BlockHash]
	if c != nil {
		if isAncestorOrSelf(c, cur) {
			return nil, fmt.Errorf("%w: block %d would descend from itself", ErrInvalidBlockSequence, b.BlockHash)
		}
		if !c.unlinked.Load() {
			c = nil // linked elsewhere: keep the tree a tree; ws moves to a new node
		}
	}
	if c == nil {
		c = &node{hash: b.BlockHash}
	}
	c.parent.Store(cur)
	c.ptok.Store(b.TokensHash)
	c.unlinked.Store(false)
	cur.setChild(b.TokensHash, c)
	return c, nil
}

// setLookup points ws's entry for hash at n, which ws has joined; a node
// the entry pointed at before loses ws.
func (x *Indexer) setLookup(ws *workerState, hash uint64, n *node) {
	old := ws.lookup[hash]
	if old == n {
		return
	}
	ws.lookup[hash] = n
	if old != nil {
		leave(ws, old)
	}
}

// remove applies a removed event for ws: every known hash is removed; the
// first unknown one is reported.
func (x *Indexer) remove(ws *workerState, hashes []uint64) error {
	var first error
	for _, h := range hashes {
		n, ok := ws.lookup[h]
		if !ok {
			if first == nil {
				first = fmt.Errorf("%w: block %d", ErrBlockNotFound, h)
			}
			continue
		}
		delete(ws.lookup, h)
		leave(ws, n)
	}
	ws.size.Store(int64(len(ws.lookup)))
	return first
}

// clear drops every block of ws, which stays registered.
func (x *Indexer) clear(ws *workerState) {
	for _, n := range ws.lookup {
		leave(ws, n)
	}
	ws.lookup = make(map[uint64]*node)
	ws.size.Store(0)
}

// leave removes ws from n. A node left empty drops its children and is
// unlinked from its parent.
func leave(ws *workerState, n *node) {
	n.mu.Lock()
	n.removeWorker(ws.idx, ws.fp)
	var parent *node
	var tok uint64
	if len(n.workers) == 0 {
		n.dropChildren()
		if !n.unlinked.Load() {
			parent, tok = n.parent.Load(), n.ptok.Load()
		}
	}
	n.mu.Unlock()
	if parent != nil {
		prune(parent, tok, n)
	}
}

// prune unlinks n from parent if n is still there and still empty. It
// locks parent, then try-locks n so that no lock order can ever deadlock;
// if n is busy (a reader is on it) the empty node stays linked, which is
// harmless: matching stops at it and the next store through it reuses it.
func prune(parent *node, tok uint64, n *node) {
	parent.mu.Lock()
	defer parent.mu.Unlock()
	if parent.child(tok) != n || !n.mu.TryLock() {
		return
	}
	if len(n.workers) == 0 {
		parent.deleteChild(tok)
		n.unlinked.Store(true)
	}
	n.mu.Unlock()
}
