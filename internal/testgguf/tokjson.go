package testgguf

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dynamo-go/dynamo/internal/jsonscan"
)

// parseTokenizerJSON reads the parts of tokenizer.json that loadVocab
// needs: model.vocab and model.merges with jsonscan (encoding/json takes
// four times as long on Qwen3's 151,669 tokens and 151,387 merges), the
// small sections with encoding/json.
func parseTokenizerJSON(b []byte) (*tokenizerJSON, error) {
	tj := &tokenizerJSON{}
	s := jsonscan.New(b)
	err := s.Object(func(key string) error {
		if key == "model" {
			return parseModel(s, tj)
		}
		raw, err := s.Skip()
		if err != nil {
			return err
		}
		switch key {
		case "added_tokens":
			if string(raw) != "null" {
				return unmarshal("added_tokens", raw, &tj.AddedTokens)
			}
		case "normalizer":
			tj.Normalizer = raw
		case "pre_tokenizer":
			tj.PreTokenizer = raw
		case "post_processor":
			tj.PostProcessor = raw
		case "decoder":
			tj.Decoder = raw
		}
		return nil
	})
	if err == nil && s.Peek() != 0 {
		err = fmt.Errorf("trailing data at byte %d", s.Pos())
	}
	if err != nil {
		return nil, fmt.Errorf("testgguf: tokenizer.json: %w", err)
	}
	return tj, nil
}

func unmarshal(what string, raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func parseModel(s *jsonscan.Reader, tj *tokenizerJSON) error {
	m := &tj.Model
	return s.Object(func(key string) error {
		switch key {
		case "vocab":
			m.Vocab = make(map[string]int, 1<<16)
			return s.Object(func(tok string) error {
				id, err := s.Uint()
				n := len(m.Vocab)
				m.Vocab[tok] = int(id)
				if len(m.Vocab) == n {
					return fmt.Errorf("model.vocab has %q twice", tok)
				}
				return err
			})
		case "merges":
			return parseMerges(s, &m.Merges)
		}
		raw, err := s.Skip()
		if err != nil {
			return err
		}
		switch key {
		case "type":
			return unmarshal("model.type", raw, &m.Type)
		case "ignore_merges":
			return unmarshal("model.ignore_merges", raw, &m.IgnoreMerges)
		case "byte_fallback":
			return unmarshal("model.byte_fallback", raw, &m.ByteFallback)
		case "continuing_subword_prefix":
			return unmarshal("model.continuing_subword_prefix", raw, &m.ContinuingSubwordPrefix)
		case "end_of_word_suffix":
			return unmarshal("model.end_of_word_suffix", raw, &m.EndOfWordSuffix)
		}
		return nil
	})
}

// parseMerges accepts both merge formats: "a b" strings, and [a, b] pairs
// (transformers >= 4.45), whose spaces are written as U+0120 like
// gguf-py does, since llama.cpp splits a merge at its first space.
func parseMerges(s *jsonscan.Reader, out *[]string) error {
	merges := make([]string, 0, 1<<16)
	var buf []byte
	err := s.Array(func(int) error {
		if s.Peek() == '"' {
			m, err := s.String()
			merges = append(merges, m)
			return err
		}
		buf = buf[:0]
		n := 0
		err := s.Array(func(int) error {
			p, err := s.RawString()
			if n++; n == 2 {
				buf = append(buf, ' ')
			}
			for _, c := range p {
				if c == ' ' {
					buf = append(buf, "\u0120"...)
				} else {
					buf = append(buf, c)
				}
			}
			return err
		})
		if err == nil && n != 2 {
			err = errors.New("a merge pair without two parts")
		}
		merges = append(merges, string(buf))
		return err
	})
	*out = merges
	return err
}
