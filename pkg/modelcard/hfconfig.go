package modelcard

import (
	"bytes"
	"encoding/json"
	"math"
)

// tokenizerConfig is the part of tokenizer_config.json the card uses.
type tokenizerConfig struct {
	BOS            specialToken    `json:"bos_token"`
	EOS            specialToken    `json:"eos_token"`
	UNK            specialToken    `json:"unk_token"`
	PAD            specialToken    `json:"pad_token"`
	ChatTemplate   json.RawMessage `json:"chat_template"`
	ModelMaxLength looseInt        `json:"model_max_length"`
}

// modelConfig is the part of config.json the card uses.
type modelConfig struct {
	MaxPositionEmbeddings looseInt `json:"max_position_embeddings"`
	NPositions            looseInt `json:"n_positions"`
	TextConfig            struct {
		MaxPositionEmbeddings looseInt `json:"max_position_embeddings"`
	} `json:"text_config"`
	EOS idList   `json:"eos_token_id"`
	BOS looseInt `json:"bos_token_id"`
}

// generationConfig is the part of generation_config.json the card uses.
type generationConfig struct {
	EOS idList   `json:"eos_token_id"`
	BOS looseInt `json:"bos_token_id"`
}

// specialToken is a special token written as "text" or as an AddedToken
// object {"content": "text", ...}; null is "".
type specialToken struct{ content string }

func (t *specialToken) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		t.content = s
		return nil
	}
	var o struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(b, &o) == nil {
		t.content = o.Content
	}
	return nil // anything else: no token
}

// looseInt is a non-negative integer that may be written as a float, or
// absent; values that are not numbers, negative or beyond uint32 (such as
// transformers' 1e30 "no limit" model_max_length) read as unset.
type looseInt struct {
	v  uint32
	ok bool
}

func (n *looseInt) UnmarshalJSON(b []byte) error {
	var f float64
	if string(b) != "null" && json.Unmarshal(b, &f) == nil && f >= 0 && f <= math.MaxUint32 && f == math.Trunc(f) {
		*n = looseInt{v: uint32(f), ok: true}
	}
	return nil
}

// idList is eos_token_id: an int, a list of ints, or null.
type idList []uint32

func (l *idList) UnmarshalJSON(b []byte) error {
	var one looseInt
	if err := one.UnmarshalJSON(b); err == nil && one.ok {
		*l = idList{one.v}
		return nil
	}
	var many []looseInt
	if json.Unmarshal(b, &many) == nil {
		for _, v := range many {
			if v.ok {
				*l = append(*l, v.v)
			}
		}
	}
	return nil
}

// vocabLookup finds a token's id in tokenizer.json: added tokens first,
// then the model's vocabulary.
type vocabLookup func(token string) (uint32, bool)

func parseVocab(f *File) (vocabLookup, error) {
	var tj struct {
		AddedTokens []struct {
			ID      uint32 `json:"id"`
			Content string `json:"content"`
		} `json:"added_tokens"`
		Model struct {
			Vocab json.RawMessage `json:"vocab"`
		} `json:"model"`
	}
	if err := decodeFile(f, &tj); err != nil {
		return nil, err
	}
	var vocab map[string]uint32
	decoded := false
	return func(token string) (uint32, bool) {
		if token == "" {
			return 0, false
		}
		for _, at := range tj.AddedTokens {
			if at.Content == token {
				return at.ID, true
			}
		}
		if !decoded {
			decoded = true
			vocab = decodeVocab(tj.Model.Vocab)
		}
		id, ok := vocab[token]
		return id, ok
	}, nil
}

// decodeVocab reads a BPE/WordPiece/WordLevel vocabulary {"token": id} or
// a Unigram one [["token", score], ...] (id = position).
func decodeVocab(raw json.RawMessage) map[string]uint32 {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil
	}
	if raw[0] == '{' {
		var m map[string]uint32
		_ = json.Unmarshal(raw, &m)
		return m
	}
	var list [][2]any
	if json.Unmarshal(raw, &list) != nil {
		return nil
	}
	m := make(map[string]uint32, len(list))
	for i, e := range list {
		if s, ok := e[0].(string); ok {
			if _, dup := m[s]; !dup {
				m[s] = uint32(i)
			}
		}
	}
	return m
}

// genConfig merges the EOS ids of generation_config.json, config.json and
// tokenizer_config.json (in that order, without duplicates), and picks the
// BOS id the same way.
func genConfig(gen generationConfig, model modelConfig, special SpecialTokens, lookup vocabLookup) GenConfig {
	var g GenConfig
	seen := map[uint32]bool{}
	add := func(id uint32) {
		if !seen[id] {
			seen[id] = true
			g.EOSTokenIDs = append(g.EOSTokenIDs, id)
		}
	}
	for _, id := range gen.EOS {
		add(id)
	}
	for _, id := range model.EOS {
		add(id)
	}
	if id, ok := lookup(special.EOS); ok {
		add(id)
	}
	switch {
	case gen.BOS.ok:
		g.BOSTokenID = &gen.BOS.v
	case model.BOS.ok:
		g.BOSTokenID = &model.BOS.v
	default:
		if id, ok := lookup(special.BOS); ok {
			g.BOSTokenID = &id
		}
	}
	return g
}

// contextLength is the architectural maximum: config.json
// max_position_embeddings, text_config.max_position_embeddings,
// n_positions, then tokenizer_config.json model_max_length; 0 if none.
func contextLength(model modelConfig, tok tokenizerConfig) uint32 {
	for _, n := range []looseInt{model.MaxPositionEmbeddings, model.TextConfig.MaxPositionEmbeddings, model.NPositions, tok.ModelMaxLength} {
		if n.ok && n.v > 0 {
			return n.v
		}
	}
	return 0
}
