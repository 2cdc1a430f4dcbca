package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/dynamo-go/dynamo/internal/jsonscan"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer/internal/decoder"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer/internal/model"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer/internal/normalize"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer/internal/pretok"
)

// Option configures loading.
type Option func(*options)

type options struct {
	config []byte
}

// WithConfig applies the id-changing behaviours transformers derives from a
// tokenizer_config.json (its contents): for LlamaTokenizer(Fast) and
// GemmaTokenizer(Fast) the post-processor is rebuilt from add_bos_token /
// add_eos_token, as transformers 4.x does at load time.
func WithConfig(tokenizerConfigJSON []byte) Option {
	return func(o *options) { o.config = tokenizerConfigJSON }
}

// FromFile loads a tokenizer.json file.
func FromFile(path string, opts ...Option) (*Tokenizer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return FromBytes(b, opts...)
}

// FromDir loads dir/tokenizer.json and, when present,
// dir/tokenizer_config.json (see WithConfig). Explicit options win.
func FromDir(dir string, opts ...Option) (*Tokenizer, error) {
	b, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	all := opts
	if cfg, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json")); err == nil {
		all = append([]Option{WithConfig(cfg)}, opts...)
	} else if !os.IsNotExist(err) {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return FromBytes(b, all...)
}

// FromBytes loads tokenizer.json contents. b is not retained.
func FromBytes(b []byte, opts ...Option) (*Tokenizer, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	// HF parses the file as a Rust string: invalid UTF-8 is an error, not
	// something to carry into the vocabulary.
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("tokenizer: tokenizer.json is not valid UTF-8")
	}
	sections := map[string][]byte{}
	r := jsonscan.New(b)
	err := r.Object(func(key string) error {
		v, err := r.Skip()
		sections[key] = v
		return err
	})
	if err != nil {
		return nil, err
	}
	if r.Peek() != 0 {
		return nil, fmt.Errorf("tokenizer: trailing data after the JSON object")
	}
	rawModel, ok := sections["model"]
	if !ok {
		return nil, fmt.Errorf("tokenizer: missing \"model\"")
	}
	t := &Tokenizer{}
	if t.model, err = model.FromJSON(rawModel); err != nil {
		return nil, err
	}
	if raw := section(sections, "normalizer"); raw != nil {
		if t.normalizer, err = normalize.FromJSON(raw); err != nil {
			return nil, fmt.Errorf("tokenizer: normalizer: %w", err)
		}
	}
	if raw := section(sections, "pre_tokenizer"); raw != nil {
		if t.pretok, err = pretok.FromJSON(raw); err != nil {
			return nil, fmt.Errorf("tokenizer: pre_tokenizer: %w", err)
		}
	}
	if t.post, err = postProcessorFromJSON(section(sections, "post_processor")); err != nil {
		return nil, err
	}
	if t.decoder, err = decoder.FromJSON(section(sections, "decoder")); err != nil {
		return nil, err
	}
	var added []AddedToken
	if raw := section(sections, "added_tokens"); raw != nil {
		if err := json.Unmarshal(raw, &added); err != nil {
			return nil, fmt.Errorf("tokenizer: added_tokens: %v", err)
		}
	}
	if err := t.addTokens(added); err != nil {
		return nil, err
	}
	t.cutAtSpaces = normalize.SplitsAtSpace(t.normalizer) && pretok.CutsAtSpace(t.pretok) &&
		t.normMatch.spaceSafe()
	if o.config != nil {
		if err := t.applyConfig(o.config); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func section(s map[string][]byte, k string) json.RawMessage {
	v, ok := s[k]
	if !ok || string(v) == "null" {
		return nil
	}
	return v
}
