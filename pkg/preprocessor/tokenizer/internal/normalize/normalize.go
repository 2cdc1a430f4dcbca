// Package normalize implements the normalizers of a Hugging Face
// tokenizer.json ("normalizer" section) with the exact character-level
// behaviour of the Rust tokenizers library (offsets/alignments are not
// tracked: only the normalized text is needed to compute ids).
package normalize

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("normalize: %w", err)
	}
	build, ok := builders[head.Type]
	if !ok {
		return nil, fmt.Errorf("%w: type %q", ErrUnsupported, head.Type)
	}
	n, err := build(raw)
	if err != nil {
		return nil, fmt.Errorf("normalize: %s: %w", head.Type, err)
	}
	return n, nil
}

var builders map[string]func([]byte) (Normalizer, error)

func init() {
	simple := func(n Normalizer) func([]byte) (Normalizer, error) {
		return func([]byte) (Normalizer, error) { return n, nil }
	}
	builders = map[string]func([]byte) (Normalizer, error){
		"NFC":            simple(NFC{}),
		"NFD":            simple(NFD{}),
		"NFKC":           simple(NFKC{}),
		"NFKD":           simple(NFKD{}),
		"Lowercase":      simple(Lowercase{}),
		"StripAccents":   simple(StripAccents{}),
		"Nmt":            simple(Nmt{}),
		"ByteLevel":      simple(ByteLevel{}),
		"Strip":          stripFromJSON,
		"Replace":        replaceFromJSON,
		"Prepend":        prependFromJSON,
		"BertNormalizer": bertFromJSON,
		"Precompiled":    precompiledFromJSON,
		"Sequence":       sequenceFromJSON,
	}
}

// Sequence applies its normalizers in order.
type Sequence []Normalizer

// Normalize implements Normalizer.
func (q Sequence) Normalize(s string) string {
	for _, n := range q {
		s = n.Normalize(s)
	}
	return s
}

func sequenceFromJSON(raw []byte) (Normalizer, error) {
	var cfg struct {
		Normalizers []json.RawMessage `json:"normalizers"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, err
	}
	seq := make(Sequence, 0, len(cfg.Normalizers))
	for _, r := range cfg.Normalizers {
		n, err := FromJSON(r)
		if err != nil {
			return nil, err
		}
		if n != nil {
			seq = append(seq, n)
		}
	}
	return seq, nil
}
