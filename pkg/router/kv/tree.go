package kv

import (
	"slices"
	"sync"
	"sync/atomic"
)

// node is one block of the radix tree: its children by local (tokens)
// hash and the workers caching it. mu guards children, workers and fp;
// the atomics are read without it.
type node struct {
	mu   sync.RWMutex
	hash uint64 // the engine's block hash (unused for the root)

	// Children: the first one inline (most nodes have one child), the
	// rest in kids. A tokens hash is in at most one of the two places.
	tok0 uint64
	kid0 *node
	kids map[uint64]*node

	workers []uint32  // worker indexes, sorted; starts in inl
	inl     [2]uint32 // room for the first workers without an allocation
	fp      uint64    // XOR of fingerprint(w) over workers

	parent   atomic.Pointer[node] // the node this one was last linked under
	ptok     atomic.Uint64        // the tokens hash of that link
	unlinked atomic.Bool          // no longer reachable through parent
	aliased  atomic.Bool          // some worker joined it under a block hash other than hash
}

// newNode returns an unlinked node for a block with no workers yet.
func newNode(hash uint64) *node {
	n := &node{hash: hash}
	n.workers = n.inl[:0]
	return n
}

// edge is a child link.
type edge struct {
	tok  uint64
	node *node
}

// child returns the child under tokens hash tok, or nil.
func (n *node) child(tok uint64) *node {
	if n.kid0 != nil && n.tok0 == tok {
		return n.kid0
	}
	if n.kids != nil {
		return n.kids[tok]
	}
	return nil
}

// setChild links c under tok, replacing any child there.
func (n *node) setChild(tok uint64, c *node) {
	switch {
	case n.kid0 != nil && n.tok0 == tok:
		n.kid0 = c
	case n.kids != nil && n.kids[tok] != nil:
		n.kids[tok] = c
	case n.kid0 == nil:
		n.tok0, n.kid0 = tok, c
	default:
		if n.kids == nil {
			n.kids = make(map[uint64]*node, 2)
		}
		n.kids[tok] = c
	}
}

// deleteChild unlinks the child under tok.
func (n *node) deleteChild(tok uint64) {
	if n.kid0 != nil && n.tok0 == tok {
		n.kid0 = nil
		return
	}
	delete(n.kids, tok)
}

// dropChildren unlinks every child (spec §3.1: a block no worker caches
// has no cached descendants worth reaching).
func (n *node) dropChildren() {
	if n.kid0 != nil {
		n.kid0.unlinked.Store(true)
		n.kid0 = nil
	}
	for _, c := range n.kids {
		c.unlinked.Store(true)
	}
	n.kids = nil
}

// appendChildren appends the child links to dst.
func (n *node) appendChildren(dst []edge) []edge {
	if n.kid0 != nil {
		dst = append(dst, edge{n.tok0, n.kid0})
	}
	for tok, c := range n.kids {
		dst = append(dst, edge{tok, c})
	}
	return dst
}

// addWorker adds worker idx (fingerprint fp) if absent.
func (n *node) addWorker(idx uint32, fp uint64) {
	i, found := slices.BinarySearch(n.workers, idx)
	if found {
		return
	}
	n.workers = slices.Insert(n.workers, i, idx)
	n.fp ^= fp
}

// hasWorker reports whether worker idx is in n.
func (n *node) hasWorker(idx uint32) bool {
	_, found := slices.BinarySearch(n.workers, idx)
	return found
}

// removeWorker removes worker idx (fingerprint fp) if present.
func (n *node) removeWorker(idx uint32, fp uint64) {
	i, found := slices.BinarySearch(n.workers, idx)
	if !found {
		return
	}
	n.workers = slices.Delete(n.workers, i, i+1)
	n.fp ^= fp
}

// isAncestorOrSelf reports whether a is n or one of n's ancestors,
// following parent links up to the first unlinked node. It reads only
// atomics.
func isAncestorOrSelf(a, n *node) bool {
	for steps := 0; n != nil && steps < maxTreeDepth; steps++ {
		if n == a {
			return true
		}
		if n.unlinked.Load() {
			return false
		}
		n = n.parent.Load()
	}
	return false
}

// maxTreeDepth bounds parent walks (a guard; real chains are far shorter).
const maxTreeDepth = 1 << 24

// fingerprint is a well-mixed 64-bit value per worker index (splitmix64),
// so that the XOR over a set identifies the set with overwhelming
// probability.
func fingerprint(idx uint32) uint64 {
	z := uint64(idx) + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
