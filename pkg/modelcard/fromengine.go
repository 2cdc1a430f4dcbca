package modelcard

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// EngineModel is what an engine that renders, tokenizes and detokenizes
// by itself reports about its model (llama.cpp's /props): no files.
type EngineModel struct {
	// ChatTemplate is the engine's default chat template ("" none). It is
	// informational: the engine renders chat prompts with it.
	ChatTemplate string
	// BOSToken and EOSToken are the model's special token strings.
	BOSToken, EOSToken string
	// EOSTokenIDs are the ids that end generation.
	EOSTokenIDs []uint32
	// VocabSize is the number of tokens of the model's vocabulary (0
	// unknown): the frontend checks token-id prompts against it.
	VocabSize int
}

// FromEngine builds the card of a model whose engine processes both
// sides, from what the engine reports: the card has no tokenizer.json
// (nor any other model file), so the frontend asks the model's workers to
// tokenize prompts and serves the engine's own text. The Options are
// FromDir's, with these differences: Name is required; Source may be ""
// (or the GGUF file the engine serves) and is used as is; ModelTypes
// default to chat and completions (the engine has its own template) and
// may not include embedding (the frontend tokenizes embedding inputs);
// ContextLength comes from the option only; ChatTemplateFile must be ""
// (the engine renders with its own template: give it to the engine); and
// Runtime must say preprocessing and postprocessing "engine". Errors wrap
// ErrInvalid. The returned card has no checksum yet: Marshal sets it.
func FromEngine(m EngineModel, opts Options) (*Card, error) {
	if strings.TrimSpace(opts.Name) == "" {
		return nil, fmt.Errorf("%w: a card built from the engine needs the served model name (Options.Name): there is no model directory to name it after", ErrInvalid)
	}
	p := opts.Runtime.Processing()
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if !p.EngineOnly() {
		return nil, fmt.Errorf("%w: a card without the model's tokenizer needs the engine to process both sides: preprocessing %q and postprocessing %q, want %q for both (or build the card from the model's files with FromDir)",
			ErrInvalid, p.Preprocessing, p.Postprocessing, ProcessingEngine)
	}
	if opts.ChatTemplateFile != "" {
		return nil, fmt.Errorf("%w: custom chat template %s: with the engine's own processing the engine renders chat prompts with its own template; give the template to the engine (llama-server --chat-template-file), or serve the model with frontend processing",
			ErrInvalid, opts.ChatTemplateFile)
	}
	c, err := newCard(opts.Name, opts.Source, opts)
	if err != nil {
		return nil, err
	}
	if c.ModelType, err = engineModelType(opts.ModelTypes); err != nil {
		return nil, err
	}
	if m.VocabSize < 0 || uint64(m.VocabSize) > math.MaxUint32 {
		return nil, fmt.Errorf("%w: vocabulary size %d out of range", ErrInvalid, m.VocabSize)
	}
	c.VocabSize = uint32(m.VocabSize)
	c.SpecialTokens = SpecialTokens{BOS: m.BOSToken, EOS: m.EOSToken}
	for _, id := range m.EOSTokenIDs {
		if !slices.Contains(c.GenConfig.EOSTokenIDs, id) {
			c.GenConfig.EOSTokenIDs = append(c.GenConfig.EOSTokenIDs, id)
		}
	}
	if m.ChatTemplate != "" {
		f, err := NewFile(FileChatTemplate, []byte(m.ChatTemplate))
		if err != nil {
			return nil, fmt.Errorf("%w: the engine's chat template is not valid UTF-8", ErrInvalid)
		}
		c.ChatTemplate = &ChatTemplate{Source: TemplateEngine, File: f, Template: m.ChatTemplate}
	}
	return c, nil
}

// engineModelType parses the model types of a card built from the engine:
// chat and completions by default; embedding is refused.
func engineModelType(names []string) (ModelType, error) {
	t, err := ParseModelType(strings.Join(names, "|"))
	if err != nil {
		return 0, err
	}
	if t == 0 {
		return ModelChat | ModelCompletions, nil
	}
	if t.Has(ModelEmbedding) {
		return 0, fmt.Errorf("%w: model type embedding needs frontend processing (the frontend tokenizes embedding inputs with the model's tokenizer, which a card built from the engine does not have): serve it with --model-path DIR", ErrInvalid)
	}
	if other := t &^ (ModelChat | ModelCompletions | ModelPrefill); other != 0 {
		return 0, fmt.Errorf("%w: model type %s cannot be served with the engine's own processing (chat, completions or prefill)", ErrInvalid, other)
	}
	return t, nil
}

// HasTokenizer reports whether the card names the model's tokenizer.json.
// Only a card whose engine processes both sides goes without (see
// FromEngine): the frontend then tokenizes through the model's workers and
// serves the engine's text, and what needs the tokenizer itself (token
// strings in logprobs, embeddings) is refused.
func (c *Card) HasTokenizer() bool { return c.TokenizerJSON != nil }

// checkTokenizer refuses a card without tokenizer.json unless its engine
// processes both sides; the error wraps ErrMissingFile.
func (c *Card) checkTokenizer() error {
	if c.HasTokenizer() {
		return nil
	}
	p := c.RuntimeConfig.Processing()
	if p.EngineOnly() {
		return nil
	}
	return fmt.Errorf("%w: card %q names no %s, which the frontend needs with preprocessing %q and postprocessing %q (only a card whose engine processes both sides may go without)",
		ErrMissingFile, c.DisplayName, FileTokenizer, p.Preprocessing, p.Postprocessing)
}
