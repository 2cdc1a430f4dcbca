// Package pretok implements the pre-tokenizers of a Hugging Face
// tokenizer.json ("pre_tokenizer" section).
package pretok

import (
	"encoding/json"
	"errors"
)

// PreTokenizer splits (and may rewrite) the current splits of a normalized
// segment into finer splits: the words the model tokenizes one by one.
// It appends to dst and returns it.
type PreTokenizer interface {
	PreTokenize(dst []string, splits []string) []string
}

// ErrUnsupported is wrapped when a pre-tokenizer type is not implemented.
var ErrUnsupported = errors.New("pretok: unsupported pre-tokenizer")

// FromJSON builds the pre-tokenizer described by raw (a tokenizer.json
// "pre_tokenizer" value; JSON null gives nil, nil).
func FromJSON(raw json.RawMessage) (PreTokenizer, error) {
	return nil, ErrUnsupported // replaced by the implementation
}
