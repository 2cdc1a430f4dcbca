// Package tokenizer is a pure-Go implementation of Hugging Face
// tokenizer.json, giving the same ids as the Rust `tokenizers` library.
package tokenizer

import "errors"

// ErrNotImplemented is returned by the stub until the implementation lands.
var ErrNotImplemented = errors.New("tokenizer: not implemented")

// Tokenizer encodes text to token ids and decodes ids to text. It is safe
// for concurrent use.
type Tokenizer struct{}

// FromFile loads a tokenizer.json file.
func FromFile(path string) (*Tokenizer, error) { return nil, ErrNotImplemented }

// FromBytes loads tokenizer.json contents.
func FromBytes(b []byte) (*Tokenizer, error) { return nil, ErrNotImplemented }

// Encode returns the ids of text; addSpecialTokens runs the post-processor
// (e.g. adds BOS).
func (t *Tokenizer) Encode(text string, addSpecialTokens bool) ([]uint32, error) {
	return nil, ErrNotImplemented
}

// Decode returns the text of ids, optionally skipping special tokens.
func (t *Tokenizer) Decode(ids []uint32, skipSpecialTokens bool) (string, error) {
	return "", ErrNotImplemented
}
