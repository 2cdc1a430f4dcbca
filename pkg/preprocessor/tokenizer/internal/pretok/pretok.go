// Package pretok implements the pre-tokenizers of a Hugging Face
// tokenizer.json ("pre_tokenizer" section) with the exact splitting
// behaviour of the Rust tokenizers library. Only the split strings are
// produced (no offsets); empty splits are dropped, as HF does.
package pretok

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// PreTokenizer splits (and may rewrite) the current splits of a normalized
// segment into finer splits: the words the model tokenizes one by one.
// It appends to dst and returns it.
//
// splits[0] is taken to begin at the start of the whole input (offset 0):
// this only matters for Metaspace with prepend_scheme "first". Callers that
// pre-tokenize a segment which does not start the input (e.g. text after an
// added token) use PreTokenizeAt with atStart=false.
type PreTokenizer interface {
	PreTokenize(dst []string, splits []string) []string
}

// StartAware is implemented by every PreTokenizer of this package.
type StartAware interface {
	// PreTokenizeAt is PreTokenize where atStart tells whether splits[0]
	// begins at offset 0 of the whole input (HF: offsets_original().0 == 0);
	// later splits never do.
	PreTokenizeAt(dst []string, splits []string, atStart bool) []string
}

// ErrUnsupported is wrapped when a pre-tokenizer type is not implemented.
var ErrUnsupported = errors.New("pretok: unsupported pre-tokenizer")

// stage is the internal form of every pre-tokenizer: it appends the splits
// it derives from splits to dst and reports whether the first appended
// split begins at offset 0 of the input.
type stage interface {
	run(dst, splits []string, atStart bool) ([]string, bool)
}

// impl adapts a stage to the exported interfaces.
type impl struct{ stage }

// PreTokenize implements PreTokenizer (splits[0] starts the input).
func (p impl) PreTokenize(dst, splits []string) []string {
	dst, _ = p.run(dst, splits, true)
	return dst
}

// PreTokenizeAt implements StartAware.
func (p impl) PreTokenizeAt(dst, splits []string, atStart bool) []string {
	dst, _ = p.run(dst, splits, atStart)
	return dst
}

// FromJSON builds the pre-tokenizer described by raw (a tokenizer.json
// "pre_tokenizer" value; JSON null gives nil, nil).
func FromJSON(raw json.RawMessage) (PreTokenizer, error) {
	s, err := stageFromJSON(raw)
	if err != nil || s == nil {
		return nil, err
	}
	return impl{s}, nil
}

func stageFromJSON(raw []byte) (stage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("pretok: %w", err)
	}
	build, ok := builders[head.Type]
	if !ok {
		return nil, fmt.Errorf("%w: type %q", ErrUnsupported, head.Type)
	}
	s, err := build(raw)
	if err != nil {
		return nil, fmt.Errorf("pretok: %s: %w", head.Type, err)
	}
	return s, nil
}

// bufPool recycles the intermediate split lists of sequence.
var bufPool = sync.Pool{New: func() any { return new([]string) }}

var builders map[string]func([]byte) (stage, error)

func init() {
	builders = map[string]func([]byte) (stage, error){
		"ByteLevel":          byteLevelFromJSON,
		"Split":              splitFromJSON,
		"Metaspace":          metaspaceFromJSON,
		"Whitespace":         func([]byte) (stage, error) { return whitespace{}, nil },
		"WhitespaceSplit":    func([]byte) (stage, error) { return whitespaceSplit{}, nil },
		"BertPreTokenizer":   func([]byte) (stage, error) { return bertPre{}, nil },
		"Punctuation":        punctuationFromJSON,
		"Digits":             digitsFromJSON,
		"CharDelimiterSplit": charDelimiterFromJSON,
		"UnicodeScripts":     func([]byte) (stage, error) { return unicodeScripts{}, nil },
		"FixedLength":        fixedLengthFromJSON,
		"Sequence":           sequenceFromJSON,
	}
}

// sequence applies its stages in order to the whole list of splits.
type sequence []stage

func (q sequence) run(dst, splits []string, atStart bool) ([]string, bool) {
	if len(q) == 0 {
		return append(dst, splits...), atStart
	}
	cur := splits
	pa, pb := bufPool.Get().(*[]string), bufPool.Get().(*[]string)
	defer func() {
		clear((*pa)[:cap(*pa)])
		clear((*pb)[:cap(*pb)])
		bufPool.Put(pa)
		bufPool.Put(pb)
	}()
	a, b := (*pa)[:0], (*pb)[:0]
	defer func() { *pa, *pb = a[:0], b[:0] }()
	for i, s := range q {
		if i == len(q)-1 {
			n := len(dst)
			dst, atStart = s.run(dst, cur, atStart)
			return dst, atStart && len(dst) > n
		}
		a, atStart = s.run(a[:0], cur, atStart)
		cur, a, b = a, b, a
	}
	return dst, atStart
}

func sequenceFromJSON(raw []byte) (stage, error) {
	var cfg struct {
		PreTokenizers []json.RawMessage `json:"pretokenizers"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, err
	}
	seq := make(sequence, 0, len(cfg.PreTokenizers))
	for _, r := range cfg.PreTokenizers {
		s, err := stageFromJSON(r)
		if err != nil {
			return nil, err
		}
		if s != nil {
			seq = append(seq, s)
		}
	}
	return seq, nil
}
