package kv

import (
	"fmt"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

// The mutations below run with ws.mu held and hold at most one node lock
// at a time (prune holds a parent, then try-locks the child).

// store applies a stored event for ws (spec §3.1).
func (x *indexer) store(ws *workerState, d *kvblock.StoreData) error {
	start := x.root
	if d.ParentHash != nil {
		p, ok := ws.lookup[*d.ParentHash]
		if !ok {
			return fmt.Errorf("%w: parent %d", errParentBlockNotFound, *d.ParentHash)
		}
		start = p
	}
	defer func() { ws.size.Store(int64(len(ws.lookup))) }()

	// cur is the node being worked on. joined means ws is already in it
	// (or it is the root or the parent block); otherwise cur was found
	// under from for blocks[i-1] and ws joins it now. old is what ws's
	// lookup held for blocks[i-1]'s hash, when resolving cur read it.
	cur, from, joined := start, start, true
	var old *node
	oldKnown := false
	for i := 0; ; {
		var b *kvblock.StoredBlock
		if i < len(d.Blocks) {
			b = &d.Blocks[i]
		}
		next, nextOld, nextOldKnown, wasMember, retry, err := advance(ws, cur, joined, b)
		if retry {
			// cur was pruned between finding it and joining it: find
			// blocks[i-1] under from again.
			cur, joined = from, true
			i--
			continue
		}
		if !joined {
			h := d.Blocks[i-1].BlockHash
			if cur.hash != h {
				cur.aliased.Store(true)
			}
			// A member of a node that is only ever joined under its own
			// hash has its lookup entry pointing there already.
			if !wasMember || cur.aliased.Load() {
				setLookup(ws, h, cur, old, oldKnown)
			}
		}
		if err != nil || b == nil {
			return err
		}
		from, cur, joined, old, oldKnown = cur, next, false, nextOld, nextOldKnown
		i++
	}
}

// advance makes ws a member of cur (unless joined) and returns cur's child
// for b (nil b: none wanted), linking one if needed; when it had to look
// at ws's lookup entry for b it returns that too (old, oldKnown).
// wasMember reports that ws was in cur already, retry that cur was
// unlinked before ws could join it. Read locks suffice when nothing
// changes (ws already in cur, child present), which is the common case
// for re-stored prefixes shared by many workers.
func advance(ws *workerState, cur *node, joined bool, b *kvblock.StoredBlock) (next, old *node, oldKnown, wasMember, retry bool, err error) {
	cur.mu.RLock()
	wasMember = !joined && !cur.unlinked.Load() && cur.hasWorker(ws.idx)
	if (joined || wasMember) && b != nil {
		next = cur.child(b.TokensHash)
	}
	cur.mu.RUnlock()
	if (joined || wasMember) && (b == nil || next != nil) {
		return next, nil, false, wasMember, false, nil
	}

	cur.mu.Lock()
	defer cur.mu.Unlock()
	if !joined {
		if cur.unlinked.Load() {
			return nil, nil, false, false, true, nil
		}
		wasMember = cur.hasWorker(ws.idx)
		cur.addWorker(ws.idx, ws.fp)
	}
	if b == nil {
		return nil, nil, false, wasMember, false, nil
	}
	next, old, oldKnown, err = resolveChild(ws, cur, b)
	return next, old, oldKnown, wasMember, false, err
}

// resolveChild returns cur's child for b, linking a reused or new node if
// there is none; then it also returns ws's lookup entry for b's hash
// (oldKnown). cur.mu is held.
func resolveChild(ws *workerState, cur *node, b *kvblock.StoredBlock) (c, old *node, oldKnown bool, err error) {
	if c := cur.child(b.TokensHash); c != nil {
		// The reference warns when c.hash != b.BlockHash (engines should
		// hash uniformly) and uses c anyway.
		return c, nil, false, nil
	}
	old = ws.lookup[b.BlockHash]
	c = old
	if c != nil {
		if isAncestorOrSelf(c, cur) {
			return nil, nil, false, fmt.Errorf("%w: block %d would descend from itself", errInvalidBlockSequence, b.BlockHash)
		}
		if !c.unlinked.Load() {
			c = nil // linked elsewhere: keep the tree a tree; ws moves to a new node
		}
	}
	if c == nil {
		c = newNode(b.BlockHash)
	}
	c.parent.Store(cur)
	c.ptok.Store(b.TokensHash)
	c.unlinked.Store(false)
	cur.setChild(b.TokensHash, c)
	return c, old, true, nil
}

// setLookup points ws's entry for hash at n, which ws has joined; a node
// the entry pointed at before (old, if oldKnown, else looked up) loses ws.
func setLookup(ws *workerState, hash uint64, n, old *node, oldKnown bool) {
	if !oldKnown {
		old = ws.lookup[hash]
	}
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
func (x *indexer) remove(ws *workerState, hashes []uint64) error {
	var first error
	for _, h := range hashes {
		n, ok := ws.lookup[h]
		if !ok {
			if first == nil {
				first = fmt.Errorf("%w: block %d", errBlockNotFound, h)
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
func (x *indexer) clear(ws *workerState) {
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
