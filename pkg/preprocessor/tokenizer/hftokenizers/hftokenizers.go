//go:build hftokenizers

// Package hftokenizers wraps Hugging Face's Rust tokenizers library, through
// github.com/daulet/tokenizers (cgo), behind the same methods as our pure-Go
// tokenizer.Tokenizer, so users who have the library can compare the two.
//
// It is built only with the build tag hftokenizers and needs the Rust-built
// static library libtokenizers.a on the linker path:
//
//	go test -tags hftokenizers ./pkg/preprocessor/tokenizer/hftokenizers/
//
// Default builds and CI do not use it; the pure-Go tokenizer is the
// default everywhere.
package hftokenizers

import (
	"fmt"

	hf "github.com/daulet/tokenizers"
)

// Tokenizer is a tokenizer.json loaded by the Rust library. It is safe for
// concurrent use; Close releases the Rust object.
type Tokenizer struct {
	tk *hf.Tokenizer
}

// FromFile loads a tokenizer.json file.
func FromFile(path string) (*Tokenizer, error) {
	tk, err := hf.FromFile(path)
	if err != nil {
		return nil, fmt.Errorf("hftokenizers: %s: %w", path, err)
	}
	return &Tokenizer{tk: tk}, nil
}

// FromBytes loads tokenizer.json contents.
func FromBytes(b []byte) (*Tokenizer, error) {
	tk, err := hf.FromBytes(b)
	if err != nil {
		return nil, fmt.Errorf("hftokenizers: %w", err)
	}
	return &Tokenizer{tk: tk}, nil
}

// Encode returns the ids of text; addSpecialTokens runs the post-processor.
func (t *Tokenizer) Encode(text string, addSpecialTokens bool) ([]uint32, error) {
	ids, _ := t.tk.Encode(text, addSpecialTokens)
	return ids, nil
}

// Decode returns the text of ids, optionally skipping special tokens.
func (t *Tokenizer) Decode(ids []uint32, skipSpecialTokens bool) (string, error) {
	return t.tk.Decode(ids, skipSpecialTokens), nil
}

// VocabSize returns the vocabulary size including added tokens.
func (t *Tokenizer) VocabSize() int { return int(t.tk.VocabSize()) }

// Close releases the Rust tokenizer.
func (t *Tokenizer) Close() error { return t.tk.Close() }
