package model

// trie is a byte trie over vocabulary pieces; edges live in one map keyed by
// node<<8|byte, terminals hold the piece id (or -1).
type trie struct {
	edges map[uint64]int32
	term  []int32
}

func (t *trie) init() {
	t.edges = make(map[uint64]int32)
	t.term = []int32{-1}
}

func (t *trie) child(node int32, b byte) int32 {
	c, ok := t.edges[uint64(node)<<8|uint64(b)]
	if !ok {
		return -1
	}
	return c
}

func (t *trie) insert(s string, id int32) {
	node := int32(0)
	for i := 0; i < len(s); i++ {
		k := uint64(node)<<8 | uint64(s[i])
		c, ok := t.edges[k]
		if !ok {
			c = int32(len(t.term))
			t.term = append(t.term, -1)
			t.edges[k] = c
		}
		node = c
	}
	if len(s) > 0 {
		t.term[node] = id
	}
}
