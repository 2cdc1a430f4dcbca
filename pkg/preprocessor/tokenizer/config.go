package tokenizer

import (
	"encoding/json"
	"fmt"
)

// tokenizerConfig holds the tokenizer_config.json fields that change ids.
type tokenizerConfig struct {
	TokenizerClass string          `json:"tokenizer_class"`
	AddBOSToken    *bool           `json:"add_bos_token"`
	AddEOSToken    *bool           `json:"add_eos_token"`
	BOSToken       json.RawMessage `json:"bos_token"`
	EOSToken       json.RawMessage `json:"eos_token"`
}

// tokenString reads a special token given as a string or as an AddedToken
// object ({"content": ...}); ok is false for null or absent.
func tokenString(raw json.RawMessage) (string, bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, true, nil
	}
	var obj struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", false, fmt.Errorf("tokenizer: tokenizer_config: bad special token %s", raw)
	}
	return obj.Content, true, nil
}

// applyConfig replicates LlamaTokenizerFast/GemmaTokenizerFast
// update_post_processor (transformers 4.x): the single template becomes
// [bos] $A [eos] according to add_bos_token (default true) and
// add_eos_token (default false), replacing the tokenizer.json one.
func (t *Tokenizer) applyConfig(raw []byte) error {
	var c tokenizerConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("tokenizer: tokenizer_config: %v", err)
	}
	switch c.TokenizerClass {
	case "LlamaTokenizer", "LlamaTokenizerFast", "GemmaTokenizer", "GemmaTokenizerFast":
	default:
		return nil
	}
	addBOS, addEOS := true, false
	if c.AddBOSToken != nil {
		addBOS = *c.AddBOSToken
	}
	if c.AddEOSToken != nil {
		addEOS = *c.AddEOSToken
	}
	tmpl := template{}
	if addBOS {
		id, err := t.configTokenID(c.BOSToken, "bos_token")
		if err != nil {
			return err
		}
		tmpl = append(tmpl, templatePiece{ids: []uint32{id}})
	}
	tmpl = append(tmpl, templatePiece{sequence: true})
	if addEOS {
		id, err := t.configTokenID(c.EOSToken, "eos_token")
		if err != nil {
			return err
		}
		tmpl = append(tmpl, templatePiece{ids: []uint32{id}})
	}
	t.post = tmpl
	return nil
}

func (t *Tokenizer) configTokenID(raw json.RawMessage, name string) (uint32, error) {
	s, ok, err := tokenString(raw)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("tokenizer: tokenizer_config: add_%s is true but %s is not set", name[:3], name)
	}
	id, ok := t.TokenToID(s)
	if !ok {
		return 0, fmt.Errorf("tokenizer: tokenizer_config: %s %q is not in the vocabulary", name, s)
	}
	return id, nil
}
