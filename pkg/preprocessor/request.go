package preprocessor

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/openai"
)

// Prepared is one engine request built from an OpenAI request, with what
// the output side needs to present it.
type Prepared struct {
	// Request goes to the next stage. Request.TokenIDs is the prompt.
	Request *backend.Request
	// Prompt is the text that was tokenized: the rendered chat template, or
	// the completions prompt; "" when the client sent token ids.
	Prompt string
	// Index is the prompt's position in a batch completions request.
	Index int
}

// PrepareChat renders, tokenizes (without adding special tokens: the
// template holds them) and builds the engine request.
func (m *Model) PrepareChat(req *openai.ChatCompletionRequest) (*Prepared, error) {
	return m.prepareChat(context.Background(), req)
}

// prepareChat is PrepareChat under a "preprocess" span of ctx's, with
// "template.render" and "tokenize" children.
func (m *Model) prepareChat(ctx context.Context, req *openai.ChatCompletionRequest) (_ *Prepared, err error) {
	ctx, span := m.tracer.Start(ctx, "preprocess")
	defer func() { endSpan(span, err) }()
	if m.tok == nil {
		// Token strings need the tokenizer: refuse before the engine
		// tokenizes anything.
		switch {
		case req.Logprobs != nil && *req.Logprobs:
			return nil, needsTokenizer("logprobs", "logprobs")
		case req.TopLogprobs != nil && *req.TopLogprobs > 0:
			return nil, needsTokenizer("top_logprobs", "logprobs")
		}
	}
	p := &Prepared{}
	var ids []uint32
	var promptJSON *backend.PromptJSON // ids as JSON, when the conversation cache wrote them
	switch nv := req.NvExt; {
	case nv != nil && len(nv.TokenData) > 0:
		ids = append([]uint32(nil), nv.TokenData...)
	case nv != nil && nv.UseRawPrompt != nil && *nv.UseRawPrompt:
		last := req.Messages[len(req.Messages)-1]
		if texts, ok := last.Content.TextOnly(); ok {
			p.Prompt = strings.Join(texts, "\n")
		} else if last.Content.Text != nil {
			p.Prompt = *last.Content.Text
		}
	case m.engineTok != nil:
		tctx, tspan := m.tracer.Start(ctx, "tokenize.engine")
		ids, err = m.tokenizeNative(tctx, req)
		tspan.SetAttributes(attribute.Int("token_count", len(ids)))
		endSpan(tspan, err)
		if err != nil {
			return nil, err
		}
	default:
		_, rspan := m.tracer.Start(ctx, "template.render")
		text, err := m.RenderChat(req)
		endSpan(rspan, err)
		if err != nil {
			return nil, err
		}
		p.Prompt = text
		tctx, tspan := m.tracer.Start(ctx, "tokenize")
		var reused int
		ids, promptJSON, reused, err = m.encodeChat(tctx, text)
		tspan.SetAttributes(attribute.Int("token_count", len(ids)), attribute.Int("tokens_reused", reused))
		endSpan(tspan, err)
		if err != nil {
			return nil, err
		}
	}
	if ids == nil {
		tctx, tspan := m.tracer.Start(ctx, "tokenize")
		ids, err = m.encode(tctx, p.Prompt, false, "messages")
		tspan.SetAttributes(attribute.Int("token_count", len(ids)))
		endSpan(tspan, err)
		if err != nil {
			return nil, err
		}
	}
	span.SetAttributes(attribute.Int("input_tokens", len(ids)))
	if err := m.checkPrompt(ids, "messages"); err != nil {
		return nil, err
	}
	logprobs := (*uint32)(nil)
	if req.TopLogprobs != nil && *req.TopLogprobs > 0 {
		logprobs = backend.Ptr(uint32(*req.TopLogprobs))
	} else if req.Logprobs != nil && *req.Logprobs {
		logprobs = backend.Ptr(uint32(1))
	}
	guided, err := req.GuidedDecoding()
	if err != nil {
		return nil, err
	}
	p.Request = m.buildRequest(ids, options{
		maxTokens: req.MaxTokensLimit(), stop: req.Stop, n: req.N, seed: req.Seed,
		temperature: req.Temperature, topP: req.TopP,
		presence: req.PresencePenalty, frequency: req.FrequencyPenalty,
		logprobs: logprobs, guided: guided,
	}, &req.CommonExt)
	p.Request.PromptJSON = promptJSON
	if err := m.checkRoom(p.Request, "messages"); err != nil {
		return nil, err
	}
	switch {
	case m.workerPostprocessing():
		// The worker runs the output side, parsers included.
		p.Request.Postprocess = postprocessOf(req)
	case m.planOutput(req).needsSpecialTokens() && req.SkipSpecialTokens == nil:
		// The parsers read markers that are special tokens.
		p.Request.OutputOptions.SkipSpecialTokens = backend.Ptr(false)
	}
	return p, nil
}

// workerPostprocessing reports whether the model's workers run the output
// side (the card's postprocessing "worker"): requests then carry
// Request.Postprocess.
func (m *Model) workerPostprocessing() bool {
	return m.card.RuntimeConfig.Postprocessing == modelcard.ProcessingWorker
}

// PrepareCompletion builds one engine request per prompt of a completions
// request (a batch fans out). Text prompts are tokenized with the
// tokenizer's special tokens (BOS and the like) added.
func (m *Model) PrepareCompletion(req *openai.CompletionRequest) ([]*Prepared, error) {
	return m.prepareCompletion(context.Background(), req)
}

// prepareCompletion is PrepareCompletion under a "preprocess" span of
// ctx's, with a "tokenize" child per text prompt.
func (m *Model) prepareCompletion(ctx context.Context, req *openai.CompletionRequest) (_ []*Prepared, err error) {
	ctx, span := m.tracer.Start(ctx, "preprocess")
	defer func() { endSpan(span, err) }()
	guided, err := req.GuidedDecoding()
	if err != nil {
		return nil, err
	}
	var logprobs *uint32
	if req.Logprobs != nil && *req.Logprobs > 0 {
		if m.tok == nil {
			return nil, needsTokenizer("logprobs", "logprobs")
		}
		logprobs = backend.Ptr(uint32(*req.Logprobs))
	}
	opts := options{
		maxTokens: req.MaxTokens, stop: req.Stop, n: req.N, seed: req.Seed, bestOf: req.BestOf,
		temperature: req.Temperature, topP: req.TopP,
		presence: req.PresencePenalty, frequency: req.FrequencyPenalty,
		logprobs: logprobs, guided: guided,
	}
	type prompt struct {
		text   string
		ids    []uint32
		isText bool
	}
	var prompts []prompt
	pr := req.Prompt
	switch {
	case req.NvExt != nil && len(req.NvExt.TokenData) > 0:
		prompts = []prompt{{ids: req.NvExt.TokenData}}
	case pr.Text != nil:
		prompts = []prompt{{text: *pr.Text, isText: true}}
	case pr.Texts != nil:
		for _, t := range pr.Texts {
			prompts = append(prompts, prompt{text: t, isText: true})
		}
	case pr.Tokens != nil:
		prompts = []prompt{{ids: pr.Tokens}}
	default:
		for _, ids := range pr.TokenSet {
			prompts = append(prompts, prompt{ids: ids})
		}
	}
	if len(prompts) == 0 {
		return nil, invalidParam("prompt", "Validation: prompt must not be empty")
	}
	out := make([]*Prepared, len(prompts))
	for i, pp := range prompts {
		ids := append([]uint32(nil), pp.ids...)
		if pp.isText {
			tctx, tspan := m.tracer.Start(ctx, "tokenize")
			ids, err = m.encode(tctx, pp.text, true, "prompt")
			tspan.SetAttributes(attribute.Int("token_count", len(ids)))
			endSpan(tspan, err)
			if err != nil {
				return nil, err
			}
		} else if err := m.checkVocab(ids); err != nil {
			return nil, err
		}
		span.SetAttributes(attribute.Int("input_tokens", len(ids)))
		if err := m.checkPrompt(ids, "prompt"); err != nil {
			return nil, err
		}
		out[i] = &Prepared{Request: m.buildRequest(ids, opts, &req.CommonExt), Prompt: pp.text, Index: i}
		if m.workerPostprocessing() {
			out[i].Request.Postprocess = &backend.Postprocess{} // text only: no parsers
		}
		if err := m.checkRoom(out[i].Request, "prompt"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// encode tokenizes text, dropping NUL characters first, adding the
// tokenizer's special tokens (BOS and the like) when addSpecial is set:
// with the model's tokenizer, or, for a model whose card has none, by its
// engine (a TokenizeRequest with Prompt). A refusal is a validation error
// on param.
func (m *Model) encode(ctx context.Context, text string, addSpecial bool, param string) ([]uint32, error) {
	if strings.IndexByte(text, 0) >= 0 {
		text = strings.ReplaceAll(text, "\x00", "")
	}
	if m.tok == nil {
		return m.encodeEngine(ctx, text, addSpecial, param)
	}
	ids, err := m.tok.Encode(text, addSpecial)
	if err != nil {
		return nil, invalidParam(param, "cannot tokenize the prompt: %v", err)
	}
	return ids, nil
}

// encodeChat is encode for a rendered chat prompt (no special tokens
// added: the template wrote them): through the conversation cache when
// the model keeps one, which also gives the ids' JSON. It also returns
// how many of the ids the cache gave.
func (m *Model) encodeChat(ctx context.Context, text string) ([]uint32, *backend.PromptJSON, int, error) {
	if m.conv == nil {
		ids, err := m.encode(ctx, text, false, "messages")
		return ids, nil, 0, err
	}
	if strings.IndexByte(text, 0) >= 0 {
		text = strings.ReplaceAll(text, "\x00", "")
	}
	ids, enc, reused, err := m.conv.encode(m.tok, text)
	if err != nil {
		return nil, nil, 0, invalidParam("messages", "cannot tokenize the prompt: %v", err)
	}
	return ids, enc, reused, nil
}

// checkVocab refuses token ids the model does not have. Without a
// tokenizer the vocabulary size is the engine's, when it reported one;
// else the ids go as they are (the engine refuses what it does not have).
func (m *Model) checkVocab(ids []uint32) error {
	n := m.vocabSize()
	if n == 0 {
		return nil
	}
	for _, id := range ids {
		if int(id) >= n {
			return invalidParam("prompt", "Validation: token id %d is out of range: the model's vocabulary has %d tokens", id, n)
		}
	}
	return nil
}

// checkRoom refuses a request whose prompt plus max_tokens exceeds the
// context, as OpenAI and vLLM do, instead of silently generating fewer.
func (m *Model) checkRoom(r *backend.Request, what string) error {
	n := m.card.ContextLength
	if n == 0 || r.StopConditions.MaxTokens == nil {
		return nil
	}
	p, mt := len(r.TokenIDs), int(*r.StopConditions.MaxTokens)
	if p+mt > int(n) {
		return invalidParam(what, "This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the %s, %d in the completion). Please reduce the length of the %s or the completion.", n, p+mt, p, what, mt, what)
	}
	return nil
}

// checkPrompt refuses an empty prompt or one that leaves no room to
// generate.
func (m *Model) checkPrompt(ids []uint32, what string) error {
	if len(ids) == 0 {
		return invalidParam(what, "Validation: the %s resulted in an empty prompt", what)
	}
	if n := m.card.ContextLength; n > 0 && len(ids) >= int(n) {
		return invalidParam(what, "This model's maximum context length is %d tokens. However, your %s resulted in %d tokens. Please reduce the length of the %s.", n, what, len(ids), what)
	}
	return nil
}

// endSpan ends span, with an error status when err is not nil.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
