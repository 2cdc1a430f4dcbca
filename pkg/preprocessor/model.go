package preprocessor

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/reasoning"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/template"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/toolcall"
	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

// ErrNoChatTemplate is returned for a chat request to a model without a
// chat template (it can still serve completions).
var ErrNoChatTemplate = errors.New("preprocessor: model has no chat template")

// Options configure a Model. The zero value is valid.
type Options struct {
	// Now is the clock of the templates' strftime_now; nil means time.Now.
	Now func() time.Time
	// Clock stamps the "created" field of responses; nil means time.Now.
	Clock func() time.Time
	// TracerProvider makes the preprocessing spans; nil makes none.
	TracerProvider trace.TracerProvider
	// EngineTokenizer renders and tokenizes chat prompts for a model
	// whose card says preprocessing "engine" (required then, unused
	// otherwise): chat requests are not rendered with the card's
	// template, and the formatted_prompt annotation is empty. For a model
	// whose card has no tokenizer it tokenizes completions text prompts
	// too (TokenizeRequest.Prompt). The frontend's is a call to a
	// worker's tokenize endpoint (pkg/pipeline). An error wrapping
	// backend.ErrInvalidArgument is the engine refusing the conversation
	// or the text; the client gets a 400 with its message.
	EngineTokenizer backend.ChatTokenizer
	// ConversationCacheBytes bounds the cache of the token ids of recent
	// chat prompts (conversation.go), with which a conversation's next
	// turn encodes only what it adds; 0 keeps no cache.
	ConversationCacheBytes int64
}

// Model holds what preprocessing one model needs, built once when the
// model's first worker appears: the tokenizer, the compiled chat templates
// (the per-model template cache), the special-token strings templates see,
// and the EOS ids. It is immutable and safe for concurrent use.
type Model struct {
	tracer    trace.Tracer
	card      *modelcard.Card
	tok       *tokenizer.Tokenizer
	templates map[string]*template.Template
	special   []kv // tokenizer_config.json's *_token entries, in file order
	eos       []uint32
	clock     func() time.Time
	// reasoning and tools are the output parsers the card names (nil:
	// none); parserErr says why a named one is not used.
	reasoning *reasoning.Parser
	tools     *toolcall.Parser
	parserErr error
	// engineTok tokenizes chat prompts when the engine preprocesses
	// (nil: the frontend renders and tokenizes).
	engineTok backend.ChatTokenizer
	// conv holds recent chat prompts' ids (nil: none).
	conv *conversationCache
}

type kv struct {
	key string
	val any
}

// NewModel loads the card's tokenizer and compiles its chat templates.
//
// A card without tokenizer.json (modelcard.FromEngine: the engine
// renders, tokenizes and detokenizes) is accepted when it says
// preprocessing and postprocessing "engine"; Options.EngineTokenizer is
// then required, and tokenizes completions prompts too. Its chat template,
// if any, is not compiled (the engine renders with it), and what needs the
// tokenizer itself (logprobs, embeddings) is refused with ErrNeedsTokenizer.
func NewModel(card *modelcard.Card, opts Options) (*Model, error) {
	if card == nil {
		return nil, errors.New("preprocessor: no model card")
	}
	if !card.HasTokenizer() && !card.RuntimeConfig.Processing().EngineOnly() {
		p := card.RuntimeConfig.Processing()
		return nil, fmt.Errorf("preprocessor: model %q: %w: the card has no tokenizer.json, which preprocessing %q and postprocessing %q need",
			card.DisplayName, modelcard.ErrMissingFile, p.Preprocessing, p.Postprocessing)
	}
	var tok *tokenizer.Tokenizer
	if card.HasTokenizer() {
		var topts []tokenizer.Option
		if card.TokenizerConfigJSON != nil {
			topts = append(topts, tokenizer.WithConfig(card.TokenizerConfigJSON.Bytes()))
		}
		var err error
		if tok, err = tokenizer.FromBytes(card.TokenizerJSON.Bytes(), topts...); err != nil {
			return nil, fmt.Errorf("preprocessor: model %q: %w", card.DisplayName, err)
		}
	}
	m := &Model{
		card:      card,
		tok:       tok,
		tracer:    telemetry.Tracer(opts.TracerProvider, "github.com/dynamo-go/dynamo/pkg/preprocessor"),
		templates: map[string]*template.Template{},
		eos:       append([]uint32(nil), card.GenConfig.EOSTokenIDs...),
		clock:     opts.Clock,
	}
	if m.clock == nil {
		m.clock = time.Now
	}
	if opts.ConversationCacheBytes > 0 && tok != nil {
		m.conv = newConversationCache(opts.ConversationCacheBytes)
	}
	if nativePreprocessing(card) {
		if opts.EngineTokenizer == nil {
			return nil, fmt.Errorf("model %q: %w", card.DisplayName, ErrNoEngineTokenizer)
		}
		m.engineTok = opts.EngineTokenizer
	}
	m.lookupParsers(card.RuntimeConfig)
	if tok == nil {
		// The engine renders chat prompts: its template on the card is
		// informational.
		m.special = cardSpecialTokens(card.SpecialTokens)
		return m, nil
	}
	for name, src := range card.ChatTemplate.Named() {
		t, err := template.Compile(src, template.Options{Now: opts.Now})
		if err != nil {
			return nil, fmt.Errorf("preprocessor: model %q: chat template %q: %w", card.DisplayName, name, err)
		}
		m.templates[name] = t
	}
	if card.TokenizerConfigJSON != nil {
		var err error
		if m.special, err = specialTokens(card.TokenizerConfigJSON.Bytes()); err != nil {
			return nil, fmt.Errorf("preprocessor: model %q: tokenizer_config.json: %w", card.DisplayName, err)
		}
	} else {
		m.special = cardSpecialTokens(card.SpecialTokens)
	}
	return m, nil
}

// Card returns the model card the Model was built from.
func (m *Model) Card() *modelcard.Card { return m.card }

// Tokenizer returns the model's tokenizer, or nil when its card has none
// (the engine processes both sides: see NewModel).
func (m *Model) Tokenizer() *tokenizer.Tokenizer { return m.tok }

// ErrNeedsTokenizer is wrapped by the refusal (a *openai.ValidationError,
// a 400) of a request that needs the model's tokenizer when its card has
// none: token strings in logprobs, embeddings.
var ErrNeedsTokenizer = errors.New("preprocessor: the request needs the model's tokenizer")

// needsTokenizer is the refusal of feature, a request field (param) that
// needs the model's tokenizer, for a model whose card has none.
func needsTokenizer(param, feature string) error {
	return fmt.Errorf("%w: %w", ErrNeedsTokenizer, invalidParam(param,
		"%s need the model's tokenizer: this model is served with the engine's own processing (no tokenizer on its card); serve it with --model-path DIR and frontend processing", feature))
}

// vocabSize is the number of tokens of the model's vocabulary: its
// tokenizer's, else what its engine reported (0: unknown).
func (m *Model) vocabSize() int {
	if m.tok != nil {
		return m.tok.VocabSize()
	}
	return int(m.card.VocabSize)
}

// ParserError reports why a parser the card names is not used (a name
// this frontend does not know: the model is served without it), or nil.
func (m *Model) ParserError() error { return m.parserErr }

// lookupParsers finds the output parsers rc names.
func (m *Model) lookupParsers(rc modelcard.RuntimeConfig) {
	var errs []error
	if name := rc.ReasoningParser; name != "" {
		p, err := reasoning.Lookup(name)
		m.reasoning = p
		errs = append(errs, err)
	}
	if name := rc.ToolCallParser; name != "" {
		p, err := toolcall.Lookup(name)
		m.tools = p
		errs = append(errs, err)
	}
	m.parserErr = errors.Join(errs...)
}

// HasChatTemplate reports whether the model can serve chat requests (an
// engine that preprocesses has its own template).
func (m *Model) HasChatTemplate() bool { return len(m.templates) > 0 || m.engineTok != nil }

// specialTokens returns tokenizer_config.json's "*_token" entries and
// additional_special_tokens as the plain values transformers puts in the
// template context ({"content": ...} objects become their content).
func specialTokens(cfg []byte) ([]kv, error) {
	v, err := template.DecodeJSON(cfg)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(*template.OrderedMap)
	if !ok {
		return nil, errors.New("not a JSON object")
	}
	var out []kv
	for _, k := range obj.Keys() {
		if !strings.HasSuffix(k, "_token") && k != "additional_special_tokens" {
			continue
		}
		val, _ := obj.Get(k)
		switch val.(type) {
		case string, *template.OrderedMap, []any:
			out = append(out, kv{k, tokenContent(val)})
		}
	}
	return out, nil
}

func tokenContent(v any) any {
	switch x := v.(type) {
	case *template.OrderedMap:
		c, _ := x.Get("content")
		return c
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = tokenContent(e)
		}
		return out
	}
	return v
}

func cardSpecialTokens(s modelcard.SpecialTokens) []kv {
	var out []kv
	for _, p := range []kv{{"bos_token", s.BOS}, {"eos_token", s.EOS}, {"unk_token", s.UNK}, {"pad_token", s.PAD}} {
		if p.val != "" {
			out = append(out, p)
		}
	}
	return out
}
