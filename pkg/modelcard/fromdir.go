package modelcard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// Model files FromDir reads.
const (
	FileTokenizer        = "tokenizer.json"
	FileTokenizerConfig  = "tokenizer_config.json"
	FileConfig           = "config.json"
	FileGenerationConfig = "generation_config.json"
	FileChatTemplate     = "chat_template.jinja"
	FileChatTemplateJSON = "chat_template.json"
)

// FromDir builds a card from a local Hugging Face model directory.
// tokenizer.json is required (ErrMissingFile without it); config.json,
// tokenizer_config.json, generation_config.json, chat_template.jinja and
// chat_template.json are read when present. Weights are never read. The
// returned card has no checksum yet: Marshal sets it.
func FromDir(dir string, opts Options) (*Card, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("modelcard: model directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory", ErrInvalid, dir)
	}
	source, name := opts.Source, opts.Name
	if source == "" {
		source = dir
	}
	if name == "" {
		name = DefaultName(source)
	}
	c, err := newCard(name, source, opts)
	if err != nil {
		return nil, err
	}
	modelType, err := ParseModelType(strings.Join(opts.ModelTypes, "|"))
	if err != nil {
		return nil, err
	}

	if c.TokenizerJSON, err = readFile(dir, FileTokenizer); err != nil {
		return nil, err
	}
	if c.TokenizerJSON == nil {
		return nil, fmt.Errorf("%w: %s has no %s (a Hugging Face fast tokenizer file is required; tokenizer.model or tiktoken files alone are not supported)",
			ErrMissingFile, dir, FileTokenizer)
	}
	for _, f := range []struct {
		dst  **File
		name string
	}{
		{&c.TokenizerConfigJSON, FileTokenizerConfig},
		{&c.ConfigJSON, FileConfig},
		{&c.GenerationConfigJSON, FileGenerationConfig},
	} {
		if *f.dst, err = readFile(dir, f.name); err != nil {
			return nil, err
		}
	}

	var tokCfg tokenizerConfig
	if err := decodeFile(c.TokenizerConfigJSON, &tokCfg); err != nil {
		return nil, err
	}
	var modelCfg modelConfig
	if err := decodeFile(c.ConfigJSON, &modelCfg); err != nil {
		return nil, err
	}
	var genCfg generationConfig
	if err := decodeFile(c.GenerationConfigJSON, &genCfg); err != nil {
		return nil, err
	}
	vocab, err := parseVocab(c.TokenizerJSON)
	if err != nil {
		return nil, err
	}

	c.SpecialTokens = SpecialTokens{
		BOS: tokCfg.BOS.content, EOS: tokCfg.EOS.content,
		UNK: tokCfg.UNK.content, PAD: tokCfg.PAD.content,
	}
	c.GenConfig = genConfig(genCfg, modelCfg, c.SpecialTokens, vocab)

	if c.ContextLength == 0 {
		c.ContextLength = contextLength(modelCfg, tokCfg)
	}

	if c.ChatTemplate, err = resolveTemplate(dir, opts.ChatTemplateFile, c.TokenizerConfigJSON); err != nil {
		return nil, err
	}
	c.ModelType = modelType
	if c.ModelType == 0 {
		c.ModelType = ModelCompletions
		if c.ChatTemplate != nil {
			c.ModelType |= ModelChat
		}
	}
	return c, nil
}

// newCard returns a card with what Options say of every card: names,
// source, model input, worker type, context length, KV block size (0:
// DefaultBlockSize), migration limit and runtime config. Name must not be
// empty.
func newCard(name, source string, opts Options) (*Card, error) {
	c := &Card{
		DisplayName:   name,
		Slug:          Slug(name),
		Aliases:       opts.Aliases,
		SourcePath:    source,
		Revision:      opts.Revision,
		ModelInput:    opts.ModelInput,
		RuntimeConfig: opts.Runtime,
	}
	if c.ModelInput == "" {
		c.ModelInput = InputTokens
	}
	var err error
	if c.WorkerType, err = ParseWorkerType(opts.DisaggregationMode); err != nil {
		return nil, err
	}
	var errs []error
	c.ContextLength = toU32("context length", opts.ContextLength, &errs)
	c.KVCacheBlockSize = toU32("KV cache block size", opts.KVCacheBlockSize, &errs)
	c.MigrationLimit = toU32("migration limit", opts.MigrationLimit, &errs)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if c.KVCacheBlockSize == 0 {
		c.KVCacheBlockSize = DefaultBlockSize
	}
	return c, nil
}

// toU32 converts an option to the card's uint32, recording an error when it
// is negative or too large.
func toU32(what string, v int, errs *[]error) uint32 {
	if v < 0 || uint64(v) > math.MaxUint32 {
		*errs = append(*errs, fmt.Errorf("%w: %s %d out of range", ErrInvalid, what, v))
		return 0
	}
	return uint32(v)
}

// DefaultName is the served name of a model loaded from source when none
// is given: a hub id as is, else the directory's base name.
func DefaultName(source string) string {
	if st, err := os.Stat(source); (err != nil || !st.IsDir()) && looksLikeHubID(source) {
		return source
	}
	return filepath.Base(filepath.Clean(source))
}

func looksLikeHubID(s string) bool {
	org, name, ok := strings.Cut(s, "/")
	return ok && org != "" && name != "" && !strings.Contains(name, "/") &&
		!strings.HasPrefix(s, ".") && !filepath.IsAbs(s)
}

// readFile returns the named file of dir as a File, or nil when it does not
// exist.
func readFile(dir, name string) (*File, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("modelcard: read %s: %w", name, err)
	}
	if strings.HasSuffix(name, ".json") && !json.Valid(b) {
		return nil, fmt.Errorf("%w: %s in %s is not valid JSON", ErrInvalid, name, dir)
	}
	return NewFile(name, b)
}

func decodeFile(f *File, v any) error {
	if f == nil {
		return nil
	}
	if err := json.Unmarshal(f.Bytes(), v); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalid, f.Path, err)
	}
	return nil
}
