// Package model implements the tokenization models of a Hugging Face
// tokenizer.json ("model" section): BPE, Unigram, WordPiece and WordLevel,
// with the exact algorithms of the Rust tokenizers library.
package model

import "errors"

// Model turns one pre-tokenized word into token ids.
type Model interface {
	// Tokenize appends the ids of word to dst and returns it.
	Tokenize(dst []uint32, word string) ([]uint32, error)
	// TokenToID returns the id of a vocabulary token.
	TokenToID(token string) (uint32, bool)
	// IDToToken returns the vocabulary token of id.
	IDToToken(id uint32) (string, bool)
	// VocabSize returns the number of entries of the model vocabulary.
	VocabSize() int
}

// ErrMissingUnk is returned when a word needs the unknown token but the
// model has none (or it is not in the vocabulary).
var ErrMissingUnk = errors.New("tokenizer: model: unknown token needed but not in the vocabulary")

// vocabR builds the dense id->token table of a token->id map.
func vocabR(vocab map[string]uint32) []string {
	maxID := -1
	for _, id := range vocab {
		if int(id) > maxID {
			maxID = int(id)
		}
	}
	r := make([]string, maxID+1)
	for tok, id := range vocab {
		r[id] = tok
	}
	return r
}

// lookupR returns r[id] if id is present in vocab.
func lookupR(r []string, vocab map[string]uint32, id uint32) (string, bool) {
	if int(id) >= len(r) {
		return "", false
	}
	s := r[id]
	if s == "" {
		if got, ok := vocab[""]; !ok || got != id {
			return "", false
		}
	}
	return s, true
}
