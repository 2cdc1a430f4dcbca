package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// llamacpp speaks llama.cpp's llama-server native API: POST /completion
// with the prompt as a token array, return_tokens (each streamed chunk
// carries its ids in tokens) and a last chunk with stop: true, stop_type
// (eos, limit, word) and the counts.
type llamacpp struct{}

// llamaRequest is the body of POST /completion (the fields the bridge
// uses).
type llamaRequest struct {
	Prompt           []uint32         `json:"prompt"`
	NPredict         int              `json:"n_predict"`
	Stream           bool             `json:"stream"`
	ReturnTokens     bool             `json:"return_tokens"`
	CachePrompt      bool             `json:"cache_prompt"`
	IgnoreEOS        *bool            `json:"ignore_eos,omitempty"`
	Temperature      *float64         `json:"temperature,omitempty"`
	TopK             *int             `json:"top_k,omitempty"`
	TopP             *float64         `json:"top_p,omitempty"`
	MinP             *float64         `json:"min_p,omitempty"`
	Seed             *int64           `json:"seed,omitempty"`
	PresencePenalty  *float64         `json:"presence_penalty,omitempty"`
	FrequencyPenalty *float64         `json:"frequency_penalty,omitempty"`
	RepeatPenalty    *float64         `json:"repeat_penalty,omitempty"`
	NProbs           *uint32          `json:"n_probs,omitempty"`
	JSONSchema       json.RawMessage  `json:"json_schema,omitempty"`
	Lora             []llamaLoraScale `json:"lora,omitempty"`
}

// llamaHealth is /health's answer: {"status":"ok"} when ready; 503 with
// an error while the model loads.
type llamaHealth struct {
	Status string `json:"status"`
}

func (llamacpp) health(ctx context.Context, e *Engine) error {
	var h llamaHealth
	if err := e.getJSON(ctx, "/health", &h); err != nil {
		return err
	}
	if h.Status != "ok" {
		return fmt.Errorf("/health status %q", h.Status)
	}
	return nil
}

func (llamacpp) info(ctx context.Context, e *Engine) (engineInfo, error) {
	var info engineInfo
	var props llamaProps
	propsErr := e.getJSON(ctx, "/props", &props)
	if propsErr == nil {
		if m := (servedModel{id: props.ModelAlias}); m.id != "" || props.ModelPath != "" {
			if m.id == "" {
				m.id = props.ModelPath
			} else if props.ModelPath != "" {
				m.aliases = []string{props.ModelPath}
			}
			info.models = append(info.models, m)
		}
		info.contextLength = props.DefaultGenerationSettings.NCtx
	}
	var models struct {
		Data []struct {
			ID   string `json:"id"`
			Meta struct {
				NVocab int `json:"n_vocab"`
			} `json:"meta"`
		} `json:"data"`
	}
	nVocab := 0
	if err := e.getJSON(ctx, "/v1/models", &models); err == nil {
		for _, m := range models.Data {
			info.models = append(info.models, servedModel{id: m.ID})
			if nVocab == 0 {
				nVocab = m.Meta.NVocab
			}
		}
	} else if propsErr != nil {
		return info, fmt.Errorf("/props: %w; /v1/models: %w", propsErr, err)
	}
	if propsErr == nil {
		native, err := e.llamaNativeModel(ctx, props, nVocab)
		if err != nil {
			return info, err
		}
		info.native = native
	}
	info.llama = llamaStartLoras(ctx, e)
	return info, nil
}

func (llamacpp) request(req *backend.Request, info engineInfo) (engineCall, error) {
	so, sc := req.SamplingOptions, req.StopConditions
	switch {
	case so.N != nil && *so.N > 1:
		return engineCall{}, refuse(DialectLlamaCpp, "n = %d (one completion per request)", *so.N)
	case so.BestOf != nil && *so.BestOf > 1:
		return engineCall{}, refuse(DialectLlamaCpp, "best_of %d", *so.BestOf)
	case so.UseBeamSearch != nil && *so.UseBeamSearch:
		return engineCall{}, refuse(DialectLlamaCpp, "beam search")
	case so.LengthPenalty != nil:
		return engineCall{}, refuse(DialectLlamaCpp, "length_penalty (a beam search parameter)")
	case sc.MinTokens != nil && *sc.MinTokens > 0:
		return engineCall{}, refuse(DialectLlamaCpp, "min_tokens %d (it has no minimum length)", *sc.MinTokens)
	case req.OutputOptions.PromptLogprobs != nil && *req.OutputOptions.PromptLogprobs > 0:
		return engineCall{}, refuse(DialectLlamaCpp, "prompt_logprobs")
	case sc.MaxThinkingTokens != nil:
		return engineCall{}, refuse(DialectLlamaCpp, "max_thinking_tokens (its reasoning budget is a server setting)")
	}
	if err := refuseRouting(DialectLlamaCpp, req, "lora_name"); err != nil {
		return engineCall{}, err
	}
	lora, err := llamaLoraField(req, info.llama)
	if err != nil {
		return engineCall{}, err
	}
	// It stops on strings and on the model's end-of-generation tokens
	// only: a stop token id that is not an EOS id cannot be honoured.
	eos := map[uint32]bool{}
	for _, l := range [][]uint32{req.EOSTokenIDs, sc.StopTokenIDsHidden} {
		for _, id := range l {
			eos[id] = true
		}
	}
	for _, l := range [][]uint32{sc.StopTokenIDs, sc.StopTokenIDsVisible} {
		for _, id := range l {
			if !eos[id] {
				return engineCall{}, refuse(DialectLlamaCpp, "stop token id %d (it stops on strings and on the model's EOS tokens only)", id)
			}
		}
	}
	body := llamaRequest{
		Prompt:           req.TokenIDs,
		NPredict:         -1,
		Stream:           true,
		ReturnTokens:     true,
		CachePrompt:      true,
		IgnoreEOS:        sc.IgnoreEOS,
		Temperature:      so.Temperature,
		TopK:             so.TopK,
		TopP:             so.TopP,
		MinP:             so.MinP,
		Seed:             so.Seed,
		PresencePenalty:  so.PresencePenalty,
		FrequencyPenalty: so.FrequencyPenalty,
		RepeatPenalty:    so.RepetitionPenalty,
		Lora:             lora,
	}
	if m := maxTokens(req, info); m != nil {
		body.NPredict = int(*m)
	}
	if lp := req.OutputOptions.Logprobs; lp != nil {
		body.NProbs = backend.Ptr(max(*lp, 1))
	}
	g, err := guidedOf(DialectLlamaCpp, req)
	if err != nil {
		return engineCall{}, err
	}
	if g != nil {
		switch {
		case g.WhitespacePattern != "":
			return engineCall{}, refuse(DialectLlamaCpp, "a guided JSON whitespace_pattern")
		case present(g.JSON):
			s := schemaText(g.JSON)
			if !json.Valid([]byte(s)) {
				return engineCall{}, fmt.Errorf("bridge: %w: guided JSON schema is not JSON", backend.ErrInvalidArgument)
			}
			body.JSONSchema = json.RawMessage(s)
		case g.Regex != "":
			return engineCall{}, refuse(DialectLlamaCpp, "a guided regex")
		case len(g.Choice) > 0:
			return engineCall{}, refuse(DialectLlamaCpp, "a guided choice")
		case g.Grammar != "":
			return engineCall{}, refuse(DialectLlamaCpp, "a guided grammar (it takes GBNF, not the EBNF the frontend sends)")
		case present(g.StructuralTag):
			return engineCall{}, refuse(DialectLlamaCpp, "a structural tag")
		}
	}
	return engineCall{path: "/completion", body: body}, nil
}

// llamaChunk is one streamed /completion chunk.
type llamaChunk struct {
	Content       string   `json:"content"`
	Tokens        []uint32 `json:"tokens"`
	Stop          bool     `json:"stop"`
	StopType      string   `json:"stop_type"`
	StoppingWord  string   `json:"stopping_word"`
	TokensEval    int      `json:"tokens_evaluated"`
	TokensCached  int      `json:"tokens_cached"`
	Probabilities []struct {
		ID          uint32  `json:"id"`
		Logprob     float64 `json:"logprob"`
		TopLogprobs []struct {
			ID      uint32  `json:"id"`
			Logprob float64 `json:"logprob"`
		} `json:"top_logprobs"`
	} `json:"completion_probabilities"`
	Timings *struct {
		CacheN *int `json:"cache_n"`
	} `json:"timings"`
	Error json.RawMessage `json:"error"`
}

type llamaDecoder struct {
	req     *backend.Request
	text    bool // outputs carry the engine's text (content, incremental)
	emitted int
	done    bool
}

func (llamacpp) decoder(req *backend.Request, info engineInfo, _ engineCall) streamDecoder {
	return &llamaDecoder{req: req, text: info.text}
}

func (d *llamaDecoder) event(field string, data []byte) ([]*backend.Output, bool, error) {
	if field == "error" {
		return nil, false, streamError(DialectLlamaCpp, data)
	}
	if strings.TrimSpace(string(data)) == "[DONE]" {
		outs, err := d.end()
		return outs, true, err
	}
	var c llamaChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, false, fmt.Errorf("bridge: %w: the llamacpp engine sent a malformed chunk: %v", backend.ErrStreamIncomplete, err)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return nil, false, streamError(DialectLlamaCpp, data)
	}
	if d.done {
		return nil, false, nil
	}
	o := &backend.Output{TokenIDs: append([]uint32{}, c.Tokens...)}
	if d.text {
		o.Text = backend.Ptr(c.Content)
	}
	if k := d.req.OutputOptions.Logprobs; k != nil && len(c.Probabilities) > 0 {
		var all [][]topLogprob
		for i := range o.TokenIDs {
			lp, alts := 0.0, []topLogprob{}
			if i < len(c.Probabilities) {
				p := c.Probabilities[i]
				lp = p.Logprob
				for r, t := range p.TopLogprobs {
					if uint32(r) >= *k {
						break
					}
					alts = append(alts, topLogprob{Rank: r + 1, TokenID: t.ID, Logprob: t.Logprob})
				}
			}
			o.LogProbs = append(o.LogProbs, lp)
			all = append(all, alts)
		}
		if b, err := json.Marshal(all); err == nil {
			o.TopLogprobs = b
		}
	}
	d.emitted += len(c.Tokens)
	if !c.Stop {
		if len(o.TokenIDs) == 0 && c.Content == "" {
			return nil, false, nil
		}
		return []*backend.Output{o}, false, nil
	}
	var kind backend.FinishKind
	switch c.StopType {
	case "limit":
		kind = backend.FinishLength
	case "word":
		kind = backend.FinishStop
	case "eos":
		kind = backend.FinishEOS
	default: // "none": stopped for another reason (context full, a time limit)
		kind = backend.FinishLength
	}
	o.FinishReason = &backend.FinishReason{Kind: kind}
	prompt := len(d.req.TokenIDs)
	if c.TokensEval > 0 {
		prompt = c.TokensEval
	}
	cached := -1 // unknown
	if c.Timings != nil && c.Timings.CacheN != nil {
		cached = *c.Timings.CacheN
	}
	d.done = true
	return []*backend.Output{usage(o, prompt, d.emitted, cached)}, true, nil
}

func (d *llamaDecoder) end() ([]*backend.Output, error) {
	if d.done {
		return nil, nil
	}
	return nil, incomplete(DialectLlamaCpp, fmt.Sprintf("without its final chunk (%d tokens)", d.emitted))
}

func (d *llamaDecoder) cancelled() []*backend.Output {
	if d.done {
		return nil
	}
	d.done = true
	return []*backend.Output{usage(backend.Cancelled(), len(d.req.TokenIDs), d.emitted, 0)}
}
