package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// sglang speaks SGLang's native API: POST /generate with input_ids and
// sampling_params, streamed as SSE items carrying output_ids (cumulative
// by default, incremental with --incremental-streaming-output: both are
// read) and meta_info {finish_reason, prompt_tokens, completion_tokens,
// cached_tokens, output_token_logprobs, output_top_logprobs}.
type sglang struct{}

// sglangRequest is the body of POST /generate (SGLang's GenerateReqInput,
// the fields the bridge uses).
type sglangRequest struct {
	InputIDs       []uint32       `json:"input_ids"`
	SamplingParams sglangSampling `json:"sampling_params"`
	Stream         bool           `json:"stream"`
	ReturnLogprob  bool           `json:"return_logprob,omitempty"`
	LogprobStart   *int           `json:"logprob_start_len,omitempty"`
	TopLogprobsNum *uint32        `json:"top_logprobs_num,omitempty"`
	RoutedDPRank   *uint32        `json:"routed_dp_rank,omitempty"`
	Priority       *int           `json:"priority,omitempty"`
	ExtraKey       *string        `json:"extra_key,omitempty"`
	LoraPath       *string        `json:"lora_path,omitempty"`
}

// sglangSampling is SGLang's SamplingParams (the API fields).
type sglangSampling struct {
	MaxNewTokens      *uint32  `json:"max_new_tokens,omitempty"`
	MinNewTokens      *uint32  `json:"min_new_tokens,omitempty"`
	StopTokenIDs      []uint32 `json:"stop_token_ids,omitempty"`
	IgnoreEOS         *bool    `json:"ignore_eos,omitempty"`
	Temperature       *float64 `json:"temperature,omitempty"`
	TopP              *float64 `json:"top_p,omitempty"`
	TopK              *int     `json:"top_k,omitempty"`
	MinP              *float64 `json:"min_p,omitempty"`
	FrequencyPenalty  *float64 `json:"frequency_penalty,omitempty"`
	PresencePenalty   *float64 `json:"presence_penalty,omitempty"`
	RepetitionPenalty *float64 `json:"repetition_penalty,omitempty"`
	SamplingSeed      *int64   `json:"sampling_seed,omitempty"`
	JSONSchema        string   `json:"json_schema,omitempty"`
	Regex             string   `json:"regex,omitempty"`
	EBNF              string   `json:"ebnf,omitempty"`
	StructuralTag     string   `json:"structural_tag,omitempty"`
	NoStopTrim        bool     `json:"no_stop_trim,omitempty"`
	SkipSpecialTokens *bool    `json:"skip_special_tokens,omitempty"`
}

func (sglang) health(ctx context.Context, e *Engine) error { return e.getOK(ctx, "/health") }

func (sglang) info(ctx context.Context, e *Engine) (engineInfo, error) {
	var info engineInfo
	var mi struct {
		ModelPath       string `json:"model_path"`
		ServedModelName string `json:"served_model_name"`
	}
	miErr := e.getJSON(ctx, "/get_model_info", &mi)
	if miErr == nil && (mi.ServedModelName != "" || mi.ModelPath != "") {
		m := servedModel{id: mi.ServedModelName}
		if m.id == "" {
			m.id = mi.ModelPath
		} else if mi.ModelPath != "" && mi.ModelPath != m.id {
			m.aliases = []string{mi.ModelPath}
		}
		info.models = append(info.models, m)
	}
	var models struct {
		Data []struct {
			ID          string `json:"id"`
			Root        string `json:"root"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if err := e.getJSON(ctx, "/v1/models", &models); err == nil {
		for _, m := range models.Data {
			sm := servedModel{id: m.ID}
			if m.Root != "" && m.Root != m.ID {
				sm.aliases = []string{m.Root}
			}
			info.models = append(info.models, sm)
			if info.contextLength == 0 {
				info.contextLength = m.MaxModelLen
			}
		}
	} else if miErr != nil {
		return info, fmt.Errorf("/get_model_info: %w; /v1/models: %w", miErr, err)
	}
	if info.contextLength == 0 {
		for _, path := range []string{"/server_info", "/get_server_info"} {
			var si struct {
				ContextLength *int `json:"context_length"`
			}
			if e.getJSON(ctx, path, &si) == nil && si.ContextLength != nil {
				info.contextLength = *si.ContextLength
				break
			}
		}
	}
	return info, nil
}

func (sglang) request(req *backend.Request, info engineInfo) (engineCall, error) {
	so, sc := req.SamplingOptions, req.StopConditions
	switch {
	case so.N != nil && *so.N > 1:
		return engineCall{}, refuse(DialectSGLang, "n = %d through the bridge (one stream per request)", *so.N)
	case so.UseBeamSearch != nil && *so.UseBeamSearch:
		return engineCall{}, refuse(DialectSGLang, "beam search through /generate")
	case so.LengthPenalty != nil:
		return engineCall{}, refuse(DialectSGLang, "length_penalty (a beam search parameter)")
	case so.BestOf != nil && *so.BestOf > 1:
		return engineCall{}, refuse(DialectSGLang, "best_of %d", *so.BestOf)
	case req.OutputOptions.PromptLogprobs != nil && *req.OutputOptions.PromptLogprobs > 0:
		return engineCall{}, refuse(DialectSGLang, "prompt_logprobs through the bridge")
	case sc.MaxThinkingTokens != nil:
		return engineCall{}, refuse(DialectSGLang, "max_thinking_tokens (no per-request thinking budget in its sampling parameters)")
	}
	if err := refuseRouting(DialectSGLang, req, "dp_rank", "cache_salt", "priority", "lora_name"); err != nil {
		return engineCall{}, err
	}
	body := sglangRequest{
		InputIDs: req.TokenIDs,
		Stream:   true,
		SamplingParams: sglangSampling{
			MaxNewTokens:      maxTokens(req, info),
			MinNewTokens:      sc.MinTokens,
			StopTokenIDs:      stopTokenIDs(req),
			IgnoreEOS:         sc.IgnoreEOS,
			Temperature:       so.Temperature,
			TopP:              so.TopP,
			TopK:              so.TopK,
			MinP:              so.MinP,
			FrequencyPenalty:  so.FrequencyPenalty,
			PresencePenalty:   so.PresencePenalty,
			RepetitionPenalty: so.RepetitionPenalty,
			SamplingSeed:      so.Seed,
		},
	}
	if lp := req.OutputOptions.Logprobs; lp != nil {
		body.ReturnLogprob = true
		body.LogprobStart = backend.Ptr(-1)
		body.TopLogprobsNum = lp
	}
	if r := req.Routing; r != nil {
		body.RoutedDPRank, body.Priority, body.ExtraKey, body.LoraPath = r.DPRank, r.Priority, r.CacheSalt, r.LoraName
	}
	g, err := guidedOf(DialectSGLang, req)
	if err != nil {
		return engineCall{}, err
	}
	if g != nil {
		sp := &body.SamplingParams
		switch {
		case g.WhitespacePattern != "":
			return engineCall{}, refuse(DialectSGLang, "a guided JSON whitespace_pattern (its sampling parameters have none)")
		case present(g.JSON):
			sp.JSONSchema = schemaText(g.JSON)
		case g.Regex != "":
			sp.Regex = g.Regex
		case g.Grammar != "":
			sp.EBNF = g.Grammar
		case present(g.StructuralTag):
			sp.StructuralTag = schemaText(g.StructuralTag)
		case len(g.Choice) > 0:
			return engineCall{}, refuse(DialectSGLang, "guided choice (use a regex)")
		}
	}
	if info.text {
		// The engine's text is the client's: skip special tokens unless
		// the request keeps them.
		body.SamplingParams.SkipSpecialTokens = backend.Ptr(true)
		if v := req.OutputOptions.SkipSpecialTokens; v != nil {
			body.SamplingParams.SkipSpecialTokens = v
		}
	}
	return engineCall{path: "/generate", body: body}, nil
}

// sglangItem is one streamed /generate item.
type sglangItem struct {
	Text      string   `json:"text"`
	OutputIDs []uint32 `json:"output_ids"`
	MetaInfo  *struct {
		FinishReason *struct {
			Type       string          `json:"type"`
			Matched    json.RawMessage `json:"matched"`
			Message    string          `json:"message"`
			StatusCode int             `json:"status_code"`
		} `json:"finish_reason"`
		PromptTokens        int                   `json:"prompt_tokens"`
		CompletionTokens    *int                  `json:"completion_tokens"`
		CachedTokens        int                   `json:"cached_tokens"`
		OutputTokenLogprobs [][]json.RawMessage   `json:"output_token_logprobs"`
		OutputTopLogprobs   [][][]json.RawMessage `json:"output_top_logprobs"`
	} `json:"meta_info"`
	Error json.RawMessage `json:"error"`
}

type sglangDecoder struct {
	req     *backend.Request
	text    bool // outputs carry the engine's text
	textLen int  // bytes of a cumulative text already sent
	emitted int
	prompt  int
	cached  int
	done    bool
}

func (sglang) decoder(req *backend.Request, info engineInfo, _ engineCall) streamDecoder {
	return &sglangDecoder{req: req, text: info.text, prompt: len(req.TokenIDs), cached: -1}
}

func (d *sglangDecoder) event(field string, data []byte) ([]*backend.Output, bool, error) {
	if field == "error" {
		return nil, false, streamError(DialectSGLang, data)
	}
	if strings.TrimSpace(string(data)) == "[DONE]" {
		outs, err := d.end()
		return outs, true, err
	}
	var it sglangItem
	if err := json.Unmarshal(data, &it); err != nil {
		return nil, false, fmt.Errorf("bridge: %w: the sglang engine sent a malformed item: %v", backend.ErrStreamIncomplete, err)
	}
	if len(it.Error) > 0 && string(it.Error) != "null" {
		return nil, false, streamError(DialectSGLang, data)
	}
	if d.done {
		return nil, false, nil
	}
	// New ids: the tail of a cumulative output_ids, or all of an
	// incremental one. completion_tokens tells which.
	ids := it.OutputIDs
	cumulative := true
	mi := it.MetaInfo
	if mi != nil && mi.CompletionTokens != nil && len(ids) != *mi.CompletionTokens {
		cumulative = false
	}
	if cumulative {
		if len(ids) < d.emitted {
			return nil, false, fmt.Errorf("bridge: %w: the sglang engine's output_ids shrank from %d to %d", backend.ErrStreamIncomplete, d.emitted, len(ids))
		}
		ids = ids[d.emitted:]
	}
	o := &backend.Output{TokenIDs: append([]uint32{}, ids...)}
	if d.text {
		// The text is cumulative like output_ids unless streamed
		// incrementally.
		t := it.Text
		if cumulative {
			if len(t) < d.textLen {
				return nil, false, fmt.Errorf("bridge: %w: the sglang engine's text shrank", backend.ErrStreamIncomplete)
			}
			t = t[d.textLen:]
		}
		d.textLen += len(t)
		o.Text = &t
	}
	if mi != nil && d.req.OutputOptions.Logprobs != nil {
		d.logprobs(o, mi.OutputTokenLogprobs, mi.OutputTopLogprobs, cumulative)
	}
	d.emitted += len(ids)
	if mi == nil || mi.FinishReason == nil {
		if len(o.TokenIDs) == 0 && (o.Text == nil || *o.Text == "") {
			return nil, false, nil
		}
		return []*backend.Output{o}, false, nil
	}
	if mi.PromptTokens > 0 {
		d.prompt = mi.PromptTokens
	}
	d.cached = mi.CachedTokens
	fr := mi.FinishReason
	var kind backend.FinishKind
	switch fr.Type {
	case "length":
		kind = backend.FinishLength
	case "abort":
		if fr.StatusCode >= 400 && fr.StatusCode < 500 && d.emitted == 0 {
			return nil, false, fmt.Errorf("bridge: %w: the sglang engine: %s", backend.ErrInvalidArgument, fr.Message)
		}
		kind = backend.FinishCancelled
	default: // "stop": matched is the stop token id, or a stop string
		kind = backend.FinishEOS
		var id uint32
		var s string
		switch {
		case json.Unmarshal(fr.Matched, &id) == nil:
			kind = finishOfStop(d.req, id)
		case json.Unmarshal(fr.Matched, &s) == nil && s != "":
			kind = backend.FinishStop
		}
	}
	o.FinishReason = &backend.FinishReason{Kind: kind}
	d.done = true
	return []*backend.Output{usage(o, d.prompt, d.emitted, d.cached)}, true, nil
}

// logprobs sets o's logprobs from SGLang's [logprob, token_id, text]
// triples (cumulative like output_ids unless streaming incrementally).
func (d *sglangDecoder) logprobs(o *backend.Output, lps [][]json.RawMessage, top [][][]json.RawMessage, cumulative bool) {
	from := 0
	if cumulative {
		from = d.emitted
	}
	triple := func(t []json.RawMessage) (float64, uint32, bool) {
		var lp float64
		var id uint32
		if len(t) < 2 || json.Unmarshal(t[0], &lp) != nil || json.Unmarshal(t[1], &id) != nil {
			return 0, 0, false
		}
		return lp, id, true
	}
	var all [][]topLogprob
	for i := range o.TokenIDs {
		lp := 0.0
		if j := from + i; j < len(lps) {
			lp, _, _ = triple(lps[j])
		}
		o.LogProbs = append(o.LogProbs, lp)
		var alts []topLogprob
		if j := from + i; j < len(top) {
			for r, t := range top[j] {
				if lp, id, ok := triple(t); ok {
					alts = append(alts, topLogprob{Rank: r + 1, TokenID: id, Logprob: lp})
				}
			}
		}
		all = append(all, alts)
	}
	if len(top) > 0 {
		if b, err := json.Marshal(all); err == nil {
			o.TopLogprobs = b
		}
	}
}

func (d *sglangDecoder) end() ([]*backend.Output, error) {
	if d.done {
		return nil, nil
	}
	return nil, incomplete(DialectSGLang, fmt.Sprintf("without a finish reason (%d tokens)", d.emitted))
}

func (d *sglangDecoder) cancelled() []*backend.Output {
	if d.done {
		return nil
	}
	d.done = true
	return []*backend.Output{usage(backend.Cancelled(), d.prompt, d.emitted, d.cached)}
}
