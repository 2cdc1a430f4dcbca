package model

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// BPEConfig holds the options of a BPE model ("model" of type "BPE").
type BPEConfig struct {
	UnkToken                string // "" means none
	HasUnk                  bool
	ContinuingSubwordPrefix string
	EndOfWordSuffix         string
	FuseUnk                 bool
	ByteFallback            bool
	IgnoreMerges            bool
}

// BPE is a byte-pair-encoding model. It is safe for concurrent use.
type BPE struct {
	cfg     BPEConfig
	vocab   map[string]uint32
	vocabR  []string
	merges  map[uint64]uint64 // pairKey(a,b) -> rank<<32 | new id
	unkID   uint32
	hasUnk  bool // unk token set and in the vocabulary
	byteIDs [256]int64
	cache   *wordCache
}

func pairKey(a, b uint32) uint64 { return uint64(a)<<32 | uint64(b) }

// NewBPE builds a BPE model from its vocabulary and ordered merges (rank =
// index). As in the Rust library, every merge part and result must be in the
// vocabulary, and a repeated pair keeps its last rank.
func NewBPE(vocab map[string]uint32, merges [][2]string, cfg BPEConfig) (*BPE, error) {
	ids := make([][2]uint32, len(merges))
	for i, mg := range merges {
		for j := range 2 {
			id, ok := vocab[mg[j]]
			if !ok {
				return nil, fmt.Errorf("tokenizer: bpe: merge token %q out of vocabulary", mg[j])
			}
			ids[i][j] = id
		}
	}
	return newBPEFromIDs(vocab, ids, cfg)
}

// newBPEFromIDs is NewBPE with merges already resolved to ids.
func newBPEFromIDs(vocab map[string]uint32, merges [][2]uint32, cfg BPEConfig) (*BPE, error) {
	m := &BPE{cfg: cfg, vocab: vocab, vocabR: vocabR(vocab), cache: newWordCache()}
	m.merges = make(map[uint64]uint64, len(merges))
	prefixLen := len(cfg.ContinuingSubwordPrefix)
	var buf []byte
	for rank, mg := range merges {
		a, b := mg[0], mg[1]
		sa, sb := m.vocabR[a], m.vocabR[b]
		if prefixLen > len(sb) {
			return nil, fmt.Errorf("tokenizer: bpe: merge part %q shorter than the continuing subword prefix", sb)
		}
		buf = append(append(buf[:0], sa...), sb[prefixLen:]...)
		n, ok := vocab[string(buf)]
		if !ok {
			return nil, fmt.Errorf("tokenizer: bpe: merge token %q out of vocabulary", buf)
		}
		m.merges[pairKey(a, b)] = uint64(rank)<<32 | uint64(n)
	}
	if cfg.HasUnk {
		m.unkID, m.hasUnk = vocab[cfg.UnkToken]
	}
	for i := range m.byteIDs {
		m.byteIDs[i] = -1
		if id, ok := vocab[fmt.Sprintf("<0x%02X>", i)]; ok {
			m.byteIDs[i] = int64(id)
		}
	}
	return m, nil
}

// TokenToID implements Model.
func (m *BPE) TokenToID(token string) (uint32, bool) { id, ok := m.vocab[token]; return id, ok }

// IDToToken implements Model.
func (m *BPE) IDToToken(id uint32) (string, bool) { return lookupR(m.vocabR, m.vocab, id) }

// VocabSize implements Model.
func (m *BPE) VocabSize() int { return len(m.vocab) }

// Tokenize implements Model.
func (m *BPE) Tokenize(dst []uint32, word string) ([]uint32, error) {
	if word == "" {
		return dst, nil
	}
	if m.cfg.IgnoreMerges {
		if id, ok := m.vocab[word]; ok {
			return append(dst, id), nil
		}
	}
	if ids, ok := m.cache.get(word); ok {
		return append(dst, ids...), nil
	}
	start := len(dst)
	dst, err := m.mergeWord(dst, word)
	if err != nil {
		return dst[:start], err
	}
	m.cache.put(word, dst[start:])
	return dst, nil
}

// mergeWord is merge_word + merge_all of the Rust implementation.
func (m *BPE) mergeWord(dst []uint32, w string) ([]uint32, error) {
	sc := getScratch()
	defer putScratch(sc)
	syms := sc.syms[:0]
	add := func(id uint32) {
		n := int32(len(syms))
		syms = append(syms, symbol{id: id, prev: n - 1, next: n + 1})
	}
	unkPending, unkActive := uint32(0), false
	prefix, suffix := m.cfg.ContinuingSubwordPrefix, m.cfg.EndOfWordSuffix
	buf := sc.buf[:0]
	for i := 0; i < len(w); {
		_, size := utf8.DecodeRuneInString(w[i:])
		end := i + size
		var id uint32
		var ok bool
		var s string
		if (i == 0 || prefix == "") && (end < len(w) || suffix == "") {
			s = w[i:end]
			id, ok = m.vocab[s]
		} else {
			buf = buf[:0]
			if i != 0 {
				buf = append(buf, prefix...)
			}
			buf = append(buf, w[i:end]...)
			if end == len(w) {
				buf = append(buf, suffix...)
			}
			id, ok = m.vocab[string(buf)]
			s = string(buf)
		}
		i = end
		if ok {
			if unkActive {
				add(unkPending)
				unkActive = false
			}
			add(id)
			continue
		}
		if m.cfg.ByteFallback {
			all := true
			for j := 0; j < len(s); j++ {
				if m.byteIDs[s[j]] < 0 {
					all = false
					break
				}
			}
			if all {
				for j := 0; j < len(s); j++ {
					add(uint32(m.byteIDs[s[j]]))
				}
				continue
			}
		}
		if m.cfg.HasUnk {
			if !m.hasUnk {
				sc.buf = buf
				return dst, fmt.Errorf("%w: %q", ErrMissingUnk, m.cfg.UnkToken)
			}
			if unkActive && !m.cfg.FuseUnk {
				add(unkPending)
			}
			unkPending, unkActive = m.unkID, true
		}
	}
	if unkActive {
		add(unkPending)
	}
	sc.buf = buf
	if len(syms) > 0 {
		syms[len(syms)-1].next = -1
	}
	syms = m.mergeAll(sc, syms)
	for _, s := range syms {
		if !s.removed {
			dst = append(dst, s.id)
		}
	}
	sc.syms = syms
	return dst, nil
}

// mergeAll applies merges lowest rank first, leftmost first among equal
// ranks, with a min-heap and a linked list of symbols: O(n log n).
func (m *BPE) mergeAll(sc *scratch, syms []symbol) []symbol {
	h := mergeHeap(sc.heap[:0])
	for i := 0; i+1 < len(syms); i++ {
		if v, ok := m.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			h = append(h, mergeItem{rank: uint32(v >> 32), pos: int32(i), newID: uint32(v)})
		}
	}
	h.init()
	for len(h) > 0 {
		top := h.pop()
		cur := &syms[top.pos]
		if cur.removed || cur.next < 0 {
			continue
		}
		nextPos := cur.next
		right := syms[nextPos]
		v, ok := m.merges[pairKey(cur.id, right.id)]
		if !ok || uint32(v) != top.newID {
			continue // stale entry
		}
		cur.id = top.newID
		cur.next = right.next
		syms[nextPos].removed = true
		if right.next >= 0 && int(right.next) < len(syms) {
			syms[right.next].prev = top.pos
		}
		if cur.prev >= 0 {
			if v, ok := m.merges[pairKey(syms[cur.prev].id, cur.id)]; ok {
				h.push(mergeItem{rank: uint32(v >> 32), pos: cur.prev, newID: uint32(v)})
			}
		}
		if cur.next >= 0 && int(cur.next) < len(syms) {
			if v, ok := m.merges[pairKey(cur.id, syms[cur.next].id)]; ok {
				h.push(mergeItem{rank: uint32(v >> 32), pos: top.pos, newID: uint32(v)})
			}
		}
	}
	sc.heap = h
	return syms
}

// String describes the model (for debugging).
func (m *BPE) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "BPE(vocab=%d merges=%d)", len(m.vocab), len(m.merges))
	return b.String()
}
