package vllmapi

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/bridge/vllmwire"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// generateRequest is vLLM's GenerateRequest, the body of POST
// /inference/v1/generate (the fields the mocker reads).
type generateRequest struct {
	Model          string          `json:"model"`
	TokenIDs       json.RawMessage `json:"token_ids"`
	SamplingParams json.RawMessage `json:"sampling_params"`
	Stream         bool            `json:"stream"`
	StreamOptions  json.RawMessage `json:"stream_options"`
	Features       json.RawMessage `json:"features"`
}

// completion returns the request as the completion request it amounts
// to: sampling_params holds the same fields as CompletionRequest's
// sampling fields (vLLM's SamplingParams), the prompt is token_ids, and
// without max_tokens the answer may fill the context (vLLM's server-side
// default for this endpoint).
func (g *generateRequest) completion(contextLength int) (*completionRequest, *apiError) {
	var cr completionRequest
	if len(g.SamplingParams) == 0 || string(g.SamplingParams) == "null" {
		return nil, badRequest("sampling_params", "Field required: sampling_params")
	}
	if err := json.Unmarshal(g.SamplingParams, &cr); err != nil {
		return nil, badRequest("sampling_params", "sampling_params: %v", err)
	}
	if len(g.Features) > 0 && string(g.Features) != "null" {
		return nil, badRequest("features", "the mocker serves token prompts only (no multimodal features)")
	}
	ids, ok := tokenIDs(g.TokenIDs)
	if !ok || len(ids) == 0 {
		return nil, badRequest("token_ids", "token_ids must be a non-empty list of token ids")
	}
	cr.Model, cr.Prompt, cr.Stream, cr.Echo, cr.Suffix = g.Model, g.TokenIDs, g.Stream, false, nil
	if len(g.StreamOptions) > 0 && string(g.StreamOptions) != "null" {
		if err := json.Unmarshal(g.StreamOptions, &cr.StreamOptions); err != nil {
			return nil, badRequest("stream_options", "stream_options: %v", err)
		}
	}
	if cr.MaxTokens == nil && contextLength > len(ids) {
		cr.MaxTokens = new(int64(contextLength - len(ids)))
	}
	return &cr, nil
}

// generate serves POST /inference/v1/generate: token ids in, token ids out
// (no text), as vLLM's ServingTokens does.
func (s *Server) generate(w http.ResponseWriter, r *http.Request) {
	s.inflight.Add(1)
	defer s.inflight.Done()
	if !s.ready.Load() {
		writeError(w, http.StatusServiceUnavailable, "the engine is not running", "")
		return
	}
	var g generateRequest
	if !s.decode(w, r, &g) || !s.checkModel(w, g.Model) {
		return
	}
	cr, aerr := g.completion(s.cfg.ContextLength)
	var br *backend.Request
	var opts *options
	if aerr == nil {
		br, opts, aerr = s.build(cr)
	}
	if aerr == nil {
		aerr = s.pinRank(r, br)
	}
	if aerr != nil {
		writeError(w, aerr.status, aerr.msg, aerr.param)
		return
	}
	model, ok := s.withLora(w, g.Model, br)
	if !ok {
		return
	}
	a, rc := s.newAnswer(r, "generate-tokens-", opts)
	a.model = model
	defer rc.Release()
	defer rc.Kill()
	s.metrics.promptTokens.Add(float64(len(opts.prompt)))
	s.log.Debug("vllmapi: generate", "id", a.id, "prompt_tokens", len(opts.prompt), "stream", g.Stream, "n", opts.n)
	if g.Stream {
		a.generateStream(w, r, rc, br)
		return
	}
	a.generateUnary(w, rc, br)
}

// chatLogprobsOf builds the logprobs of o's tokens.
func chatLogprobsOf(o *backend.Output, k int) *vllmwire.ChatCompletionLogProbs {
	var top [][]engineTopLogprob
	if len(o.TopLogprobs) > 0 {
		_ = json.Unmarshal(o.TopLogprobs, &top)
	}
	lp := &vllmwire.ChatCompletionLogProbs{Content: []vllmwire.ChatLogProb{}}
	for j, id := range o.TokenIDs {
		v := 0.0
		if j < len(o.LogProbs) {
			v = o.LogProbs[j]
		}
		e := vllmwire.ChatLogProb{Token: fmt.Sprintf("token_id:%d", id), Logprob: max(v, -9999), TopLogprobs: []vllmwire.ChatLogProb{}}
		if j < len(top) {
			for _, t := range top[j] {
				if len(e.TopLogprobs) < max(k, 1) {
					e.TopLogprobs = append(e.TopLogprobs, vllmwire.ChatLogProb{Token: fmt.Sprintf("token_id:%d", t.TokenID), Logprob: max(t.Logprob, -9999)})
				}
			}
		}
		lp.Content = append(lp.Content, e)
	}
	return lp
}

// generateStream answers with GenerateStreamResponse chunks as vLLM
// does: one per output with new tokens, the finish_reason on the chunk of
// a choice's last tokens (the mocker ends a choice with an output of its
// own, so each choice's chunk is held until its next output shows
// whether it was the last: a chunk leaves one engine step late), then
// with include_usage a chunk with no choices and the usage, then [DONE].
// An engine failure is a data: {"error": ...} event before [DONE].
func (a *answer) generateStream(w http.ResponseWriter, r *http.Request, rc *runtime.Context, br *backend.Request) {
	sse := openSSE(w)
	send := sse.send
	held := make([]*vllmwire.GenerateChoice, len(a.choices))
	flush := func(i int) error {
		ch := held[i]
		if ch == nil {
			return nil
		}
		held[i] = nil
		chunk := vllmwire.GenerateStreamResponse{RequestID: a.id, Choices: []vllmwire.GenerateChoice{*ch}}
		if a.opts.continuous {
			n := len(a.choices[i].ids)
			chunk.Usage = &vllmwire.UsageInfo{PromptTokens: len(a.opts.prompt), CompletionTokens: n, TotalTokens: len(a.opts.prompt) + n}
		}
		return send(chunk)
	}
	var failed error
	emit := func(o *backend.Output) error {
		c, i, err := a.choice(o)
		if err != nil {
			return err
		}
		if c.finish != nil {
			return nil // a stop string ended the choice
		}
		c.ids = append(c.ids, o.TokenIDs...)
		a.s.metrics.generationTokens.Add(float64(len(o.TokenIDs)))
		if c.stop != nil {
			a.text(c, o.IsTerminal()) // only to find the stop strings
		}
		if o.IsTerminal() && c.finish == nil {
			if err := a.finish(c, o); err != nil {
				failed = err
				return err
			}
		}
		if len(o.TokenIDs) > 0 {
			if err := flush(i); err != nil {
				return err
			}
			ch := &vllmwire.GenerateChoice{Index: i, TokenIDs: append([]uint32{}, o.TokenIDs...)}
			if a.opts.logprobs {
				ch.Logprobs = chatLogprobsOf(o, int(*br.OutputOptions.Logprobs))
			}
			held[i] = ch
		}
		if c.finish != nil {
			if held[i] != nil {
				held[i].FinishReason = c.finish
			}
			return flush(i)
		}
		return nil
	}
	err := a.s.eng.Generate(rc, br, emit)
	if r.Context().Err() != nil {
		a.s.log.Debug("vllmapi: client went away", "id", a.id)
		return
	}
	if failed != nil {
		err = failed
	}
	sse.end(err, func() {
		for i := range held {
			_ = flush(i)
		}
		if a.opts.includeUsage {
			u := a.usage(a.completionTokens())
			_ = send(vllmwire.GenerateStreamResponse{RequestID: a.id, Choices: []vllmwire.GenerateChoice{}, Usage: &u})
		}
	})
}

// generateUnary answers with one GenerateResponse once every choice has
// finished.
func (a *answer) generateUnary(w http.ResponseWriter, rc *runtime.Context, br *backend.Request) {
	lps := make([]*vllmwire.ChatCompletionLogProbs, len(a.choices))
	emit := func(o *backend.Output) error {
		c, i, err := a.choice(o)
		if err != nil {
			return err
		}
		if c.finish != nil {
			return nil
		}
		c.ids = append(c.ids, o.TokenIDs...)
		a.s.metrics.generationTokens.Add(float64(len(o.TokenIDs)))
		if a.opts.logprobs && len(o.TokenIDs) > 0 {
			lp := chatLogprobsOf(o, int(*br.OutputOptions.Logprobs))
			if lps[i] == nil {
				lps[i] = &vllmwire.ChatCompletionLogProbs{}
			}
			lps[i].Content = append(lps[i].Content, lp.Content...)
		}
		if c.stop != nil {
			a.text(c, o.IsTerminal())
		}
		if o.IsTerminal() && c.finish == nil {
			return a.finish(c, o)
		}
		return nil
	}
	if err := a.s.eng.Generate(rc, br, emit); err != nil {
		if rc.Err() != nil {
			return
		}
		status, msg := engineError(err)
		writeError(w, status, msg, "")
		return
	}
	resp := vllmwire.GenerateResponse{RequestID: a.id, Choices: []vllmwire.GenerateChoice{}, Usage: a.usage(a.completionTokens())}
	for i, c := range a.choices {
		resp.Choices = append(resp.Choices, vllmwire.GenerateChoice{Index: i, Logprobs: lps[i], FinishReason: c.finish, TokenIDs: append([]uint32{}, c.ids...)})
	}
	writeJSON(w, http.StatusOK, resp)
}
