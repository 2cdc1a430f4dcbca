package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unsafe"

	"github.com/dynamo-go/dynamo/internal/jsonscan"
)

// rawModel is the union of the fields of every model type.
type rawModel struct {
	typ         string
	vocabMap    map[string]uint32
	vocabList   []string
	scores      []float64
	merges      [][2]string // when merges precede the vocabulary
	mergeIDs    [][2]uint32
	hasMerges   bool
	scalars     map[string]json.RawMessage
	vocabIsList bool
	hasVocab    bool
}

// FromJSON builds the model described by raw (the tokenizer.json "model"
// value). Files without "type" are inferred as the Rust untagged
// deserializer does: merges => BPE, list vocab => Unigram,
// continuing_subword_prefix/max_input_chars_per_word => WordPiece, else
// WordLevel.
func FromJSON(raw []byte) (Model, error) {
	rm, err := parseRaw(raw)
	if err != nil {
		return nil, err
	}
	typ := rm.typ
	if typ == "" {
		switch {
		case rm.hasMerges:
			typ = "BPE"
		case rm.vocabIsList:
			typ = "Unigram"
		case rm.has("max_input_chars_per_word") || rm.has("continuing_subword_prefix"):
			typ = "WordPiece"
		default:
			typ = "WordLevel"
		}
	}
	if !rm.hasVocab {
		return nil, fmt.Errorf("tokenizer: model %s: missing vocab", typ)
	}
	if typ != "Unigram" && rm.vocabIsList {
		return nil, fmt.Errorf("tokenizer: model %s: vocab must be an object", typ)
	}
	switch typ {
	case "BPE":
		var cfg BPEConfig
		if err := rm.optString("unk_token", &cfg.UnkToken, &cfg.HasUnk); err != nil {
			return nil, err
		}
		var ignore bool
		if err := rm.optString("continuing_subword_prefix", &cfg.ContinuingSubwordPrefix, &ignore); err != nil {
			return nil, err
		}
		if err := rm.optString("end_of_word_suffix", &cfg.EndOfWordSuffix, &ignore); err != nil {
			return nil, err
		}
		for k, p := range map[string]*bool{"fuse_unk": &cfg.FuseUnk, "byte_fallback": &cfg.ByteFallback, "ignore_merges": &cfg.IgnoreMerges} {
			if err := rm.optBool(k, p); err != nil {
				return nil, err
			}
		}
		if rm.merges != nil {
			return NewBPE(rm.vocabMap, rm.merges, cfg)
		}
		return newBPEFromIDs(rm.vocabMap, rm.mergeIDs, cfg)
	case "WordPiece":
		unk, prefix, maxChars := "[UNK]", "##", 100
		var set bool
		if err := rm.optString("unk_token", &unk, &set); err != nil {
			return nil, err
		}
		if err := rm.optString("continuing_subword_prefix", &prefix, &set); err != nil {
			return nil, err
		}
		if v, ok := rm.scalars["max_input_chars_per_word"]; ok && string(v) != "null" {
			if err := json.Unmarshal(v, &maxChars); err != nil {
				return nil, fmt.Errorf("tokenizer: model WordPiece: max_input_chars_per_word: %v", err)
			}
		}
		return NewWordPiece(rm.vocabMap, unk, prefix, maxChars), nil
	case "WordLevel":
		unk := "<unk>"
		var set bool
		if err := rm.optString("unk_token", &unk, &set); err != nil {
			return nil, err
		}
		return NewWordLevel(rm.vocabMap, unk), nil
	case "Unigram":
		if !rm.vocabIsList {
			return nil, fmt.Errorf("tokenizer: model Unigram: vocab must be a list")
		}
		unkID := int64(-1)
		if v, ok := rm.scalars["unk_id"]; ok && string(v) != "null" {
			if err := json.Unmarshal(v, &unkID); err != nil {
				return nil, fmt.Errorf("tokenizer: model Unigram: unk_id: %v", err)
			}
		}
		var bf bool
		if err := rm.optBool("byte_fallback", &bf); err != nil {
			return nil, err
		}
		return NewUnigram(rm.vocabList, rm.scores, unkID, bf)
	}
	return nil, fmt.Errorf("tokenizer: unsupported model type %q", typ)
}

func (rm *rawModel) has(k string) bool { _, ok := rm.scalars[k]; return ok }

func (rm *rawModel) optString(k string, dst *string, set *bool) error {
	v, ok := rm.scalars[k]
	if !ok || string(v) == "null" {
		return nil
	}
	if err := json.Unmarshal(v, dst); err != nil {
		return fmt.Errorf("tokenizer: model field %s: %v", k, err)
	}
	*set = true
	return nil
}

func (rm *rawModel) optBool(k string, dst *bool) error {
	v, ok := rm.scalars[k]
	if !ok || string(v) == "null" {
		return nil
	}
	if err := json.Unmarshal(v, dst); err != nil {
		return fmt.Errorf("tokenizer: model field %s: %v", k, err)
	}
	return nil
}

func parseRaw(raw []byte) (*rawModel, error) {
	rm := &rawModel{scalars: map[string]json.RawMessage{}}
	r := jsonscan.New(raw)
	err := r.Object(func(key string) error {
		switch key {
		case "type":
			s, err := r.String()
			rm.typ = s
			return err
		case "vocab":
			rm.hasVocab = true
			switch r.Peek() {
			case '{':
				return parseVocabMap(r, rm)
			case '[':
				rm.vocabIsList = true
				return parseVocabList(r, rm)
			}
			return fmt.Errorf("tokenizer: model vocab: expected object or list")
		case "merges":
			if r.Null() {
				return nil
			}
			rm.hasMerges = true
			return parseMerges(r, rm)
		}
		v, err := r.Skip()
		rm.scalars[key] = v
		return err
	})
	if err != nil {
		return nil, err
	}
	return rm, nil
}

func parseVocabMap(r *jsonscan.Reader, rm *rawModel) error {
	rm.vocabMap = make(map[string]uint32, r.CountMembers())
	var a arena
	return r.ObjectRaw(func(k []byte) error {
		key := a.str(k)
		id, err := r.Uint()
		if err != nil {
			return err
		}
		if id > 1<<32-1 {
			return fmt.Errorf("tokenizer: model vocab: id %d out of range", id)
		}
		rm.vocabMap[key] = uint32(id)
		return nil
	})
}

func parseVocabList(r *jsonscan.Reader, rm *rawModel) error {
	return r.Array(func(int) error {
		if err := r.Expect('['); err != nil {
			return err
		}
		p, err := r.String()
		if err != nil {
			return err
		}
		if err := r.Expect(','); err != nil {
			return err
		}
		sc, err := r.Number() // bit for bit as Rust reads it: Viterbi ties depend on it
		if err != nil {
			return err
		}
		rm.vocabList = append(rm.vocabList, p)
		rm.scores = append(rm.scores, sc)
		return r.Expect(']')
	})
}

// parseMerges accepts both "a b" strings (lines starting with "#version"
// are skipped and do not count as ranks) and ["a","b"] pairs.
func parseMerges(r *jsonscan.Reader, rm *rawModel) error {
	if rm.vocabMap != nil && rm.merges == nil {
		return parseMergeIDs(r, rm)
	}
	return r.Array(func(int) error {
		a, b, skip, err := readMerge(r, len(rm.merges)+1)
		if err != nil || skip {
			return err
		}
		rm.merges = append(rm.merges, [2]string{string(a), string(b)})
		return nil
	})
}

// readMerge reads one merges entry, a ["a","b"] pair or an "a b" line; skip
// reports a "#version" header line, which is not a merge. line numbers the
// error. a and b may alias the input: use them before the next read.
func readMerge(r *jsonscan.Reader, line int) (a, b []byte, skip bool, err error) {
	if r.Peek() == '[' {
		if err = r.Expect('['); err != nil {
			return nil, nil, false, err
		}
		if a, err = r.RawString(); err != nil {
			return nil, nil, false, err
		}
		if err = r.Expect(','); err != nil {
			return nil, nil, false, err
		}
		if b, err = r.RawString(); err != nil {
			return nil, nil, false, err
		}
		return a, b, false, r.Expect(']')
	}
	text, err := r.RawString()
	if err != nil {
		return nil, nil, false, err
	}
	if bytes.HasPrefix(text, []byte("#version")) {
		return nil, nil, true, nil
	}
	sp := bytes.IndexByte(text, ' ')
	if sp < 0 || bytes.IndexByte(text[sp+1:], ' ') >= 0 {
		return nil, nil, false, fmt.Errorf("tokenizer: model merges: invalid merge %q at line %d", text, line)
	}
	return text[:sp], text[sp+1:], false, nil
}

// parseMergeIDs resolves merges to id pairs directly (the vocabulary was
// already read), avoiding one string allocation per merge part.
func parseMergeIDs(r *jsonscan.Reader, rm *rawModel) error {
	v := rm.vocabMap
	rm.mergeIDs = make([][2]uint32, 0, len(v))
	lookup := func(b []byte) (uint32, error) {
		id, ok := v[string(b)]
		if !ok {
			return 0, fmt.Errorf("tokenizer: bpe: merge token %q out of vocabulary", b)
		}
		return id, nil
	}
	return r.Array(func(int) error {
		a, b, skip, err := readMerge(r, len(rm.mergeIDs)+1)
		if err != nil || skip {
			return err
		}
		ia, err := lookup(a)
		if err != nil {
			return err
		}
		ib, err := lookup(b)
		if err != nil {
			return err
		}
		rm.mergeIDs = append(rm.mergeIDs, [2]uint32{ia, ib})
		return nil
	})
}

// arena copies many small strings into few large blocks.
type arena struct{ block []byte }

func (a *arena) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > 1024 {
		return string(b)
	}
	if cap(a.block)-len(a.block) < len(b) {
		a.block = make([]byte, 0, 64<<10)
	}
	off := len(a.block)
	a.block = append(a.block, b...)
	return unsafe.String(&a.block[off], len(b))
}
