package model

import (
	"fmt"
	"unicode/utf8"
)

// unkPenalty is K_UNK_PENALTY of the Rust/SentencePiece implementation.
const unkPenalty = 10.0

// Unigram is a SentencePiece unigram language model tokenized with Viterbi.
// It is safe for concurrent use.
type Unigram struct {
	pieces       []string
	scores       []float64
	ids          map[string]uint32
	unkID        int64 // -1 if none
	byteFallback bool
	minScore     float64
	trie         trie
	byteIDs      [256]int64
	cache        *wordCache
}

// NewUnigram builds a Unigram model; unkID < 0 means none. A repeated piece
// resolves to its last id, as in the Rust library.
func NewUnigram(pieces []string, scores []float64, unkID int64, byteFallback bool) (*Unigram, error) {
	if len(pieces) != len(scores) {
		return nil, fmt.Errorf("tokenizer: unigram: %d pieces but %d scores", len(pieces), len(scores))
	}
	if unkID >= int64(len(pieces)) {
		return nil, fmt.Errorf("tokenizer: unigram: unk_id %d out of vocabulary", unkID)
	}
	if len(pieces) == 0 {
		return nil, fmt.Errorf("tokenizer: unigram: empty vocabulary")
	}
	m := &Unigram{pieces: pieces, scores: scores, unkID: unkID, byteFallback: byteFallback,
		ids: make(map[string]uint32, len(pieces)), cache: newWordCache()}
	m.trie.init()
	m.minScore = 1e300
	for i, p := range pieces {
		m.ids[p] = uint32(i)
		m.trie.insert(p, int32(i))
		if scores[i] < m.minScore {
			m.minScore = scores[i]
		}
	}
	for i := range m.byteIDs {
		m.byteIDs[i] = -1
		if id, ok := m.ids[fmt.Sprintf("<0x%02X>", i)]; ok {
			m.byteIDs[i] = int64(id)
		}
	}
	return m, nil
}

// TokenToID implements Model.
func (m *Unigram) TokenToID(token string) (uint32, bool) { id, ok := m.ids[token]; return id, ok }

// IDToToken implements Model.
func (m *Unigram) IDToToken(id uint32) (string, bool) {
	if int(id) >= len(m.pieces) {
		return "", false
	}
	return m.pieces[id], true
}

// VocabSize implements Model.
func (m *Unigram) VocabSize() int { return len(m.pieces) }

type viterbiNode struct {
	id      int64
	score   float64
	startAt int // -1: not reached
}

// Tokenize implements Model.
func (m *Unigram) Tokenize(dst []uint32, word string) ([]uint32, error) {
	if word == "" {
		return dst, nil
	}
	if ids, ok := m.cache.get(word); ok {
		return append(dst, ids...), nil
	}
	start := len(dst)
	pieces, err := m.encode(word)
	if err != nil {
		return dst, err
	}
	for _, p := range pieces {
		if id, ok := m.ids[p]; ok {
			dst = append(dst, id)
			continue
		}
		if m.byteFallback {
			all := true
			for j := 0; j < len(p); j++ {
				if m.byteIDs[p[j]] < 0 {
					all = false
					break
				}
			}
			if all {
				for j := 0; j < len(p); j++ {
					dst = append(dst, uint32(m.byteIDs[p[j]]))
				}
				continue
			}
		}
		if m.unkID < 0 {
			return dst[:start], ErrMissingUnk
		}
		dst = append(dst, uint32(m.unkID))
	}
	m.cache.put(word, dst[start:])
	return dst, nil
}

// encode is the optimized Viterbi of the Rust implementation; consecutive
// unknown characters are fused into one piece.
func (m *Unigram) encode(s string) ([]string, error) {
	unkScore := m.minScore - unkPenalty
	best := make([]viterbiNode, len(s)+1)
	for i := range best {
		best[i].startAt = -1
	}
	for at := 0; at < len(s); {
		till := best[at].score
		_, mblen := utf8.DecodeRuneInString(s[at:])
		hasSingle := false
		node := int32(0)
		for k := at; k < len(s); k++ {
			node = m.trie.child(node, s[k])
			if node < 0 {
				break
			}
			id := m.trie.term[node]
			if id < 0 {
				continue
			}
			end := k + 1
			cand := m.scores[id] + till
			// Strictly better only: on equal scores the path found first
			// (the longest last piece) stays, as in Rust. Which sums are
			// equal depends on the last bits of the scores, so these are
			// read as Rust reads them (jsonscan.Number).
			if t := &best[end]; t.startAt < 0 || cand > t.score {
				t.score, t.startAt, t.id = cand, at, int64(id)
			}
			if end-at == mblen {
				hasSingle = true
			}
		}
		if !hasSingle {
			if m.unkID < 0 {
				return nil, ErrMissingUnk
			}
			cand := unkScore + till
			if t := &best[at+mblen]; t.startAt < 0 || cand > t.score {
				t.score, t.startAt, t.id = cand, at, m.unkID
			}
		}
		at += mblen
	}
	var out []string
	unkEnd := -1 // end of the pending fused unknown run
	for end := len(s); end > 0; {
		n := best[end]
		if m.unkID >= 0 && n.id == m.unkID {
			if unkEnd < 0 {
				unkEnd = end
			}
		} else {
			if unkEnd >= 0 {
				out = append(out, s[end:unkEnd])
				unkEnd = -1
			}
			out = append(out, s[n.startAt:end])
		}
		end = n.startAt
		if end == 0 && unkEnd >= 0 {
			out = append(out, s[0:unkEnd])
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}
