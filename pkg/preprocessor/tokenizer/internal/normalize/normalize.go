// Package normalize implements the normalizers of a Hugging Face
// tokenizer.json ("normalizer" section).
package normalize

import (
	"encoding/json"
	"errors"
)

// Normalizer rewrites one segment of input text before pre-tokenization.
type Normalizer interface {
	Normalize(s string) string
}

// ErrUnsupported is wrapped when a normalizer type is not implemented.
var ErrUnsupported = errors.New("normalize: unsupported normalizer")

// FromJSON builds the normalizer described by raw (a tokenizer.json
// "normalizer" value; JSON null gives nil, nil).
func FromJSON(raw json.RawMessage) (Normalizer, error) {
	return nil, ErrUnsupported // replaced by the implementation
}
