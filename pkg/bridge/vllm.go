package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/bridge/vllmwire"
)

// vllm speaks vLLM's OpenAI-compatible server. Requests go to its
// token-in/token-out endpoint POST /inference/v1/generate when Start
// found that it streams there (vllm_generate.go), else to POST
// /v1/completions with the prompt as token ids, return_token_ids (vLLM >=
// 0.10.2: each stream choice carries the new ids in token_ids) and
// stream_options.include_usage (the last chunk carries usage and no
// choices). A request that needs what only completions has (the engine's
// text, beam search) goes to completions either way.
type vllm struct{}

func (vllm) health(ctx context.Context, e *Engine) error { return e.getOK(ctx, "/health") }

func (vllm) info(ctx context.Context, e *Engine) (engineInfo, error) {
	var models struct {
		Data []struct {
			ID          string `json:"id"`
			Root        string `json:"root"`
			Parent      string `json:"parent"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if err := e.getJSON(ctx, "/v1/models", &models); err != nil {
		return engineInfo{}, err
	}
	var info engineInfo
	for _, m := range models.Data {
		if m.Parent != "" {
			continue // a LoRA adapter it holds, not a model it serves
		}
		sm := servedModel{id: m.ID}
		if m.Root != "" && m.Root != m.ID {
			sm.aliases = append(sm.aliases, m.Root)
		}
		info.models = append(info.models, sm)
		if m.MaxModelLen > 0 && info.contextLength == 0 {
			info.contextLength = m.MaxModelLen
		}
	}
	if len(info.models) > 0 {
		var err error
		if info.generate, err = vllmUseGenerate(ctx, e, info.models[0].id); err != nil {
			return info, err
		}
	}
	return info, nil
}

// vllmCommon are the checks and the pieces both vLLM endpoints share.
func vllmCommon(req *backend.Request) (*vllmwire.StructuredOutputs, http.Header, error) {
	so := req.SamplingOptions
	if so.BestOf != nil && *so.BestOf > 1 {
		return nil, nil, refuse(DialectVLLM, "best_of %d (its OpenAI server dropped best_of)", *so.BestOf)
	}
	if p := req.OutputOptions.PromptLogprobs; p != nil && *p > 0 {
		return nil, nil, refuse(DialectVLLM, "prompt_logprobs when streaming")
	}
	if err := refuseRouting(DialectVLLM, req, "dp_rank", "cache_salt", "priority", "lora_name"); err != nil {
		return nil, nil, err
	}
	g, err := guidedOf(DialectVLLM, req)
	if err != nil {
		return nil, nil, err
	}
	var s *vllmwire.StructuredOutputs
	if g != nil {
		s = &vllmwire.StructuredOutputs{JSON: g.JSON, Regex: g.Regex, Choice: g.Choice, Grammar: g.Grammar, WhitespacePattern: g.WhitespacePattern}
		if present(g.StructuralTag) {
			s.StructuralTag = schemaText(g.StructuralTag)
		}
	}
	var h http.Header
	if r := req.Routing; r != nil && r.DPRank != nil {
		// vLLM's API server reads the rank from this header
		// (OpenAIServing._get_data_parallel_rank).
		h = http.Header{"X-Data-Parallel-Rank": []string{strconv.FormatUint(uint64(*r.DPRank), 10)}}
	}
	return s, h, nil
}

// vllmModel is the model field of a request: the LoRA adapter it asks
// for (vLLM serves each loaded adapter as a model), else the served
// model.
func vllmModel(req *backend.Request, info engineInfo) string {
	if r := req.Routing; r != nil && r.LoraName != nil && *r.LoraName != "" {
		return *r.LoraName
	}
	return info.served
}

// vllmNeedsCompletions reports why req must go to /v1/completions even
// when the engine streams /inference/v1/generate ("" when it need not):
// the engine's text, and beam search, are completions' only.
func vllmNeedsCompletions(req *backend.Request, info engineInfo) string {
	so := req.SamplingOptions
	switch {
	case info.text:
		return "the engine's text"
	case so.UseBeamSearch != nil && *so.UseBeamSearch:
		return "beam search"
	case so.LengthPenalty != nil:
		return "length_penalty"
	}
	return ""
}

func (vllm) request(req *backend.Request, info engineInfo) (engineCall, error) {
	structured, header, err := vllmCommon(req)
	if err != nil {
		return engineCall{}, err
	}
	if info.generate && vllmNeedsCompletions(req, info) == "" {
		return vllmGenerateCall(req, info, structured, header), nil
	}
	so, sc := req.SamplingOptions, req.StopConditions
	body := vllmwire.CompletionRequest{
		Model:                  vllmModel(req, info),
		Prompt:                 req.TokenIDs,
		Stream:                 true,
		StreamOptions:          vllmwire.StreamOptions{IncludeUsage: true},
		ReturnTokenIDs:         true,
		MaxTokens:              maxTokens(req, info),
		MinTokens:              sc.MinTokens,
		IgnoreEOS:              sc.IgnoreEOS,
		StopTokenIDs:           stopTokenIDs(req),
		IncludeStopStrInOutput: so.IncludeStopStrInOutput,
		Temperature:            so.Temperature,
		TopP:                   so.TopP,
		TopK:                   so.TopK,
		MinP:                   so.MinP,
		Seed:                   so.Seed,
		PresencePenalty:        so.PresencePenalty,
		FrequencyPenalty:       so.FrequencyPenalty,
		RepetitionPenalty:      so.RepetitionPenalty,
		N:                      so.N,
		UseBeamSearch:          so.UseBeamSearch,
		LengthPenalty:          so.LengthPenalty,
		StructuredOutputs:      structured,
		ThinkingTokenBudget:    sc.MaxThinkingTokens,
	}
	if info.text {
		// The engine's text is the client's: skip special tokens unless
		// the request keeps them (the frontend's default).
		body.SkipSpecialTokens = true
		if v := req.OutputOptions.SkipSpecialTokens; v != nil {
			body.SkipSpecialTokens = *v
		}
	}
	if lp := req.OutputOptions.Logprobs; lp != nil {
		body.Logprobs = lp
		body.ReturnTokensAsTokenIDs = backend.Ptr(true)
	}
	if r := req.Routing; r != nil {
		body.CacheSalt, body.Priority = r.CacheSalt, r.Priority
	}
	return engineCall{path: vllmwire.CompletionsPath, body: body, header: header}, nil
}

// vllmChunk is one streamed vllmwire.CompletionStreamResponse, or one
// vllmwire.GenerateStreamResponse of /inference/v1/generate (no text, no
// stop_reason, logprobs in the chat shape), or an error event: one view
// of the fields the bridge reads, so that one decoder reads both
// endpoints (a choice's logprobs are decoded by the endpoint's shape).
type vllmChunk struct {
	Choices []struct {
		Index        int             `json:"index"`
		Text         string          `json:"text"`
		TokenIDs     []uint32        `json:"token_ids"`
		FinishReason *string         `json:"finish_reason"`
		StopReason   json.RawMessage `json:"stop_reason"`
		Logprobs     json.RawMessage `json:"logprobs"`
	} `json:"choices"`
	Usage *vllmwire.UsageInfo `json:"usage"`
	Error json.RawMessage     `json:"error"`
}

// vllmChoice is the state of one choice of a stream.
type vllmChoice struct {
	emitted int
	last    uint32          // the last token id, when emitted > 0
	finish  *backend.Output // its terminal, held until the usage arrives
}

type vllmDecoder struct {
	req       *backend.Request
	text      bool // outputs carry the engine's text
	generate  bool // the stream of /inference/v1/generate
	maxTokens *uint32
	n         int
	choices   []vllmChoice
	prompt    int
	cached    int // -1 until the engine reports it
}

func (vllm) decoder(req *backend.Request, info engineInfo, call engineCall) streamDecoder {
	n := 1
	if req.SamplingOptions.N != nil && *req.SamplingOptions.N > 1 {
		n = *req.SamplingOptions.N
	}
	return &vllmDecoder{req: req, text: info.text, generate: call.path == vllmwire.GeneratePath, n: n, choices: make([]vllmChoice, n),
		prompt: len(req.TokenIDs), cached: -1, maxTokens: maxTokens(req, info)}
}

func (d *vllmDecoder) index(i int) *uint32 {
	if d.n <= 1 {
		return nil
	}
	return backend.Ptr(uint32(i))
}

func (d *vllmDecoder) event(field string, data []byte) ([]*backend.Output, bool, error) {
	if field == "error" {
		return nil, false, streamError(DialectVLLM, data)
	}
	if strings.TrimSpace(string(data)) == "[DONE]" {
		outs, err := d.end()
		return outs, true, err
	}
	var c vllmChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, false, fmt.Errorf("bridge: %w: the vllm engine sent a malformed chunk: %v", backend.ErrStreamIncomplete, err)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return nil, false, streamError(DialectVLLM, data)
	}
	var outs []*backend.Output
	for _, ch := range c.Choices {
		if ch.Index < 0 || ch.Index >= d.n {
			return outs, false, fmt.Errorf("bridge: %w: the vllm engine sent choice %d of %d", backend.ErrStreamIncomplete, ch.Index, d.n)
		}
		st := &d.choices[ch.Index]
		if st.finish != nil {
			continue
		}
		o := &backend.Output{TokenIDs: ch.TokenIDs, Index: d.index(ch.Index)}
		if o.TokenIDs == nil {
			o.TokenIDs = []uint32{}
		}
		if d.text {
			o.Text = backend.Ptr(ch.Text)
		}
		if present(ch.Logprobs) && d.req.OutputOptions.Logprobs != nil {
			if err := d.logprobs(o, ch.Logprobs); err != nil {
				return outs, false, err
			}
		}
		st.emitted += len(ch.TokenIDs)
		if len(ch.TokenIDs) > 0 {
			st.last = ch.TokenIDs[len(ch.TokenIDs)-1]
		}
		if ch.FinishReason == nil {
			if len(o.TokenIDs) > 0 || ch.Text != "" && d.text {
				outs = append(outs, o)
			}
			continue
		}
		o.FinishReason = &backend.FinishReason{Kind: d.finish(*ch.FinishReason, ch.StopReason, st)}
		if o.FinishReason.Kind == backend.FinishError {
			o.FinishReason.Message = "the vllm engine ended the request with an error"
		}
		st.finish = o
	}
	if u := c.Usage; u != nil {
		if u.PromptTokens > 0 {
			d.prompt = u.PromptTokens
		}
		if u.PromptTokensDetails != nil {
			d.cached = u.PromptTokensDetails.CachedTokens
		}
	}
	return outs, false, nil
}

// logprobs sets o's logprobs from a choice's: the completions shape, or
// the chat shape of /inference/v1/generate.
func (d *vllmDecoder) logprobs(o *backend.Output, raw json.RawMessage) error {
	if d.generate {
		return vllmChatLogprobs(o, raw)
	}
	var lp vllmwire.CompletionLogProbs
	if err := json.Unmarshal(raw, &lp); err != nil {
		return fmt.Errorf("bridge: %w: the vllm engine sent malformed logprobs: %v", backend.ErrStreamIncomplete, err)
	}
	vllmLogprobs(o, lp.TokenLogprobs, lp.Tokens, lp.TopLogprobs)
	return nil
}

// finish maps vLLM's finish_reason (and stop_reason: the stop token id,
// null for EOS; /inference/v1/generate has none, so the choice's last
// token tells) to a finish kind.
func (d *vllmDecoder) finish(reason string, stopReason json.RawMessage, st *vllmChoice) backend.FinishKind {
	switch reason {
	case "length":
		return backend.FinishLength
	case "abort":
		return backend.FinishCancelled
	case "error":
		return backend.FinishError
	case "content_filter":
		return backend.FinishContentFilter
	}
	if d.generate {
		if st.emitted == 0 {
			return backend.FinishEOS
		}
		return finishOfStop(d.req, st.last)
	}
	var id uint32
	if json.Unmarshal(stopReason, &id) == nil {
		return finishOfStop(d.req, id)
	}
	var s string
	if json.Unmarshal(stopReason, &s) == nil && s != "" {
		return backend.FinishStop
	}
	return backend.FinishEOS
}

// terminals returns the held terminals of the finished choices, with
// their usage, and marks them sent.
func (d *vllmDecoder) terminals(cancel bool) []*backend.Output {
	var outs []*backend.Output
	for i := range d.choices {
		st := &d.choices[i]
		o := st.finish
		if o == nil && !cancel {
			continue
		}
		if o == nil {
			o = backend.Cancelled()
			o.Index = d.index(i)
		}
		outs = append(outs, usage(o, d.prompt, st.emitted, d.cached))
		st.finish = &backend.Output{} // sent
	}
	return outs
}

func (d *vllmDecoder) end() ([]*backend.Output, error) {
	for i := range d.choices {
		st := &d.choices[i]
		if st.finish != nil {
			continue
		}
		// /inference/v1/generate sends no chunk for an output without new
		// tokens, so a finish that came without one is missing: what ended
		// the choice is known from its last token or its length.
		if kind, ok := d.inferFinish(st); ok {
			st.finish = &backend.Output{TokenIDs: []uint32{}, Index: d.index(i), FinishReason: &backend.FinishReason{Kind: kind}}
			continue
		}
		return nil, incomplete(DialectVLLM, fmt.Sprintf("before choice %d finished (%d tokens)", i, st.emitted))
	}
	return d.terminals(false), nil
}

// inferFinish tells why a choice of /inference/v1/generate ended when the
// stream ended cleanly without its finish: a stop or EOS id last, or
// max_tokens reached.
func (d *vllmDecoder) inferFinish(st *vllmChoice) (backend.FinishKind, bool) {
	if !d.generate || st.emitted == 0 {
		return "", false
	}
	for _, id := range stopTokenIDs(d.req) {
		if id == st.last {
			return finishOfStop(d.req, id), true
		}
	}
	if d.maxTokens != nil && st.emitted >= int(*d.maxTokens) {
		return backend.FinishLength, true
	}
	return "", false
}

func (d *vllmDecoder) cancelled() []*backend.Output { return d.terminals(true) }

// vllmLogprobs sets o's logprobs from vLLM's completions logprobs, whose
// tokens are "token_id:<id>" (return_tokens_as_token_ids); a missing (or
// null) logprob is 0.
func vllmLogprobs(o *backend.Output, lps []float64, tokens []string, top []map[string]float64) {
	for i := range o.TokenIDs {
		lp := 0.0
		if i < len(lps) {
			lp = lps[i]
		}
		o.LogProbs = append(o.LogProbs, lp)
	}
	if len(top) == 0 {
		return
	}
	all := make([][]topLogprob, 0, len(o.TokenIDs))
	for i := range o.TokenIDs {
		var alts []topLogprob
		if i < len(top) {
			for tok, lp := range top[i] {
				id, ok := tokenIDOf(tok)
				if !ok {
					continue
				}
				if math.IsInf(lp, -1) {
					lp = -9999
				}
				alts = append(alts, topLogprob{TokenID: id, Logprob: lp})
			}
		}
		sort.Slice(alts, func(a, b int) bool {
			if alts[a].Logprob != alts[b].Logprob {
				return alts[a].Logprob > alts[b].Logprob
			}
			return alts[a].TokenID < alts[b].TokenID
		})
		for r := range alts {
			alts[r].Rank = r + 1
		}
		all = append(all, alts)
	}
	if b, err := json.Marshal(all); err == nil {
		o.TopLogprobs = b
	}
}

// tokenIDOf reads vLLM's "token_id:<id>" token spelling.
func tokenIDOf(s string) (uint32, bool) {
	v, ok := strings.CutPrefix(s, "token_id:")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseUint(v, 10, 32)
	return uint32(id), err == nil
}
