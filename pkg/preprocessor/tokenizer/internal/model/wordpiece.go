package model

import (
	"fmt"
	"unicode/utf8"
)

// WordPiece is the greedy longest-match-first model of BERT.
type WordPiece struct {
	vocab        map[string]uint32
	vocabR       []string
	unkToken     string
	prefix       string
	maxInputChar int
}

// NewWordPiece builds a WordPiece model.
func NewWordPiece(vocab map[string]uint32, unkToken, prefix string, maxInputCharsPerWord int) *WordPiece {
	return &WordPiece{vocab: vocab, vocabR: vocabR(vocab), unkToken: unkToken, prefix: prefix, maxInputChar: maxInputCharsPerWord}
}

// TokenToID implements Model.
func (m *WordPiece) TokenToID(token string) (uint32, bool) { id, ok := m.vocab[token]; return id, ok }

// IDToToken implements Model.
func (m *WordPiece) IDToToken(id uint32) (string, bool) { return lookupR(m.vocabR, m.vocab, id) }

// VocabSize implements Model.
func (m *WordPiece) VocabSize() int { return len(m.vocab) }

func (m *WordPiece) unk(dst []uint32) ([]uint32, error) {
	id, ok := m.vocab[m.unkToken]
	if !ok {
		return dst, fmt.Errorf("%w: %q", ErrMissingUnk, m.unkToken)
	}
	return append(dst, id), nil
}

// Tokenize implements Model.
func (m *WordPiece) Tokenize(dst []uint32, word string) ([]uint32, error) {
	if utf8.RuneCountInString(word) > m.maxInputChar {
		return m.unk(dst)
	}
	start0 := len(dst)
	var buf []byte
	for start := 0; start < len(word); {
		end := len(word)
		found := false
		for start < end {
			var id uint32
			var ok bool
			if start > 0 {
				buf = append(append(buf[:0], m.prefix...), word[start:end]...)
				id, ok = m.vocab[string(buf)]
			} else {
				id, ok = m.vocab[word[start:end]]
			}
			if ok {
				dst = append(dst, id)
				found = true
				break
			}
			_, size := utf8.DecodeLastRuneInString(word[start:end])
			end -= size
		}
		if !found {
			return m.unk(dst[:start0])
		}
		start = end
	}
	return dst, nil
}

// WordLevel maps each word to its vocabulary id or to the unknown token.
type WordLevel struct {
	vocab    map[string]uint32
	vocabR   []string
	unkToken string
}

// NewWordLevel builds a WordLevel model.
func NewWordLevel(vocab map[string]uint32, unkToken string) *WordLevel {
	return &WordLevel{vocab: vocab, vocabR: vocabR(vocab), unkToken: unkToken}
}

// TokenToID implements Model.
func (m *WordLevel) TokenToID(token string) (uint32, bool) { id, ok := m.vocab[token]; return id, ok }

// IDToToken implements Model.
func (m *WordLevel) IDToToken(id uint32) (string, bool) { return lookupR(m.vocabR, m.vocab, id) }

// VocabSize implements Model.
func (m *WordLevel) VocabSize() int { return len(m.vocab) }

// Tokenize implements Model.
func (m *WordLevel) Tokenize(dst []uint32, word string) ([]uint32, error) {
	if id, ok := m.vocab[word]; ok {
		return append(dst, id), nil
	}
	if id, ok := m.vocab[m.unkToken]; ok {
		return append(dst, id), nil
	}
	return dst, fmt.Errorf("%w: %q", ErrMissingUnk, m.unkToken)
}
