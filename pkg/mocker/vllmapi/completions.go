package vllmapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/bridge/vllmwire"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

type choiceState struct {
	ids        []uint32 // generated
	dec        detokenizer
	stop       *stopMatcher // nil without stop strings
	sentPrompt bool
	textOffset int
	text       strings.Builder
	lp         *vllmwire.CompletionLogProbs // unary: accumulated
	finish     *string
	stopReason any
}

// completions serves POST /v1/completions.
func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	s.inflight.Add(1)
	defer s.inflight.Done()
	if !s.ready.Load() {
		writeError(w, http.StatusServiceUnavailable, "the engine is not running", "")
		return
	}
	var req completionRequest
	if !s.decode(w, r, &req) || !s.checkModel(w, req.Model) {
		return
	}
	br, opts, aerr := s.build(&req)
	if aerr == nil {
		aerr = s.pinRank(r, br)
	}
	if aerr != nil {
		writeError(w, aerr.status, aerr.msg, aerr.param)
		return
	}
	model, ok := s.withLora(w, req.Model, br)
	if !ok {
		return
	}
	a, rc := s.newAnswer(r, "cmpl-", opts)
	a.model = model
	id := a.id
	defer rc.Release()
	defer rc.Kill() // the answer is written: nothing of the request may run on
	s.metrics.promptTokens.Add(float64(len(opts.prompt)))
	s.log.Debug("vllmapi: request", "id", id, "prompt_tokens", len(opts.prompt), "stream", req.Stream, "n", opts.n)
	if req.Stream {
		a.stream(w, r, rc, br)
		return
	}
	a.unary(w, rc, br)
}

// newAnswer starts the answer of a request with id prefix + X-Request-Id
// (or a random hex UUID), under a runtime.Context tied to the HTTP
// request; the caller releases and kills it when the answer is written.
func (s *Server) newAnswer(r *http.Request, prefix string, opts *options) (*answer, *runtime.Context) {
	base := r.Header.Get("X-Request-Id")
	if base == "" {
		base = hexUUID()
	}
	id := prefix + base
	rc := runtime.NewContext(r.Context(), id)
	a := &answer{s: s, rc: rc, opts: opts, id: id, created: time.Now().Unix(), model: s.cfg.Model, choices: make([]*choiceState, opts.n)}
	for i := range a.choices {
		a.choices[i] = &choiceState{dec: detokenizer{f: s.cfg.Detokenize, skip: opts.skipSpecial}, stop: newStopMatcher(opts.stops, opts.includeStop)}
	}
	return a, rc
}

// answer is one request's answer in the making.
type answer struct {
	s       *Server
	rc      *runtime.Context
	opts    *options
	id      string
	created int64
	model   string // the name answers carry: the served model, or the LoRA adapter asked for
	choices []*choiceState
	// cached is the engine's count of prompt tokens served from its
	// prefix cache, once a terminal output reported it.
	cached *int
}

// finish records a terminal output of c and returns the finish reason,
// or an error for an engine failure.
func (a *answer) finish(c *choiceState, o *backend.Output) error {
	if u := o.CompletionUsage; u != nil && u.PromptTokensDetails != nil {
		n := u.PromptTokensDetails.CachedTokens
		a.cached = &n
	}
	kind := o.FinishReason.Kind
	var reason string
	switch kind {
	case backend.FinishError:
		return errors.New(o.FinishReason.Message)
	case backend.FinishLength:
		reason = "length"
	case backend.FinishCancelled:
		reason = "abort"
	default:
		reason = "stop"
		if kind == backend.FinishEOS && len(c.ids) > 0 {
			last := c.ids[len(c.ids)-1]
			if !slices.Contains(a.opts.eosIDs, last) && slices.Contains(a.opts.stopIDs, last) {
				c.stopReason = last
			}
		}
	}
	c.finish = &reason
	a.s.metrics.success.WithLabelValues(reason).Inc()
	return nil
}

// text returns the text c's newest ids add, with the request's stop
// strings applied: a match ends the choice (finish "stop", stop_reason the
// string) and, once every choice has ended, stops the engine's request
// (its later outputs are dropped). At the choice's end (terminal) the text
// held back for a possible stop string is released.
func (a *answer) text(c *choiceState, terminal bool) string {
	t := c.dec.next(c.ids)
	if c.stop == nil {
		return t
	}
	emit, stop, matched := c.stop.push(t)
	if !matched {
		if terminal {
			emit += c.stop.flush()
		}
		return emit
	}
	reason := "stop"
	c.finish, c.stopReason = &reason, stop
	a.s.metrics.success.WithLabelValues(reason).Inc()
	for _, other := range a.choices {
		if other.finish == nil {
			return emit
		}
	}
	a.rc.StopGenerating()
	return emit
}

// choice returns the state of o's choice.
func (a *answer) choice(o *backend.Output) (*choiceState, int, error) {
	i := 0
	if o.Index != nil {
		i = int(*o.Index)
	}
	if i >= len(a.choices) {
		return nil, 0, fmt.Errorf("vllmapi: output for choice %d of %d", i, len(a.choices))
	}
	return a.choices[i], i, nil
}

// usage is the answer's usage for completion tokens.
func (a *answer) usage(completion int) vllmwire.UsageInfo {
	u := vllmwire.UsageInfo{PromptTokens: len(a.opts.prompt), CompletionTokens: completion, TotalTokens: len(a.opts.prompt) + completion}
	if a.cached != nil {
		u.PromptTokensDetails = &vllmwire.PromptTokenUsageInfo{CachedTokens: *a.cached}
	}
	return u
}

// stream answers with SSE chunks: one per engine output, then the usage
// chunk when asked for, then [DONE]. The headers go out at once.
func (a *answer) stream(w http.ResponseWriter, r *http.Request, rc *runtime.Context, br *backend.Request) {
	sse := openSSE(w)
	send := sse.send
	var failed error
	emit := func(o *backend.Output) error {
		c, i, err := a.choice(o)
		if err != nil {
			return err
		}
		if c.finish != nil {
			return nil // a stop string ended the choice
		}
		toks := o.TokenIDs
		c.ids = append(c.ids, toks...)
		a.s.metrics.generationTokens.Add(float64(len(toks)))
		var text string
		if a.opts.detokenize {
			text = a.text(c, o.IsTerminal())
		}
		if o.IsTerminal() && c.finish == nil {
			if err := a.finish(c, o); err != nil {
				failed = err
				return err
			}
		}
		if len(toks) == 0 && c.finish == nil {
			return nil
		}
		ch := vllmwire.CompletionStreamChoice{Index: i, Text: text, FinishReason: c.finish, StopReason: c.stopReason}
		if !c.sentPrompt {
			ch.PromptTokenIDs, c.sentPrompt = a.opts.prompt, true
		}
		if a.opts.returnTokenIDs {
			ch.TokenIDs = append([]uint32{}, toks...)
		}
		if a.opts.logprobs {
			ch.Logprobs = a.logprobs(c, o, toks)
		}
		chunk := vllmwire.CompletionStreamResponse{ID: a.id, Object: "text_completion", Created: a.created, Model: a.model, Choices: []vllmwire.CompletionStreamChoice{ch}}
		if a.opts.continuous {
			chunk.Usage = &vllmwire.UsageInfo{PromptTokens: len(a.opts.prompt), CompletionTokens: len(c.ids), TotalTokens: len(a.opts.prompt) + len(c.ids)}
		}
		return send(chunk)
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
		if a.opts.includeUsage {
			_ = send(vllmwire.CompletionUsageChunk{ID: a.id, Object: "text_completion", Created: a.created, Model: a.model, Choices: []vllmwire.CompletionStreamChoice{},
				Usage: a.usage(a.completionTokens())})
		}
	})
}

// engineError maps a Generate error to an HTTP status and message.
func engineError(err error) (int, string) {
	switch {
	case errors.Is(err, backend.ErrInvalidArgument):
		return http.StatusBadRequest, err.Error()
	case errors.Is(err, backend.ErrEngineShutdown):
		return http.StatusServiceUnavailable, err.Error()
	}
	return http.StatusInternalServerError, err.Error()
}

// unary answers with one JSON body once every choice has finished.
func (a *answer) unary(w http.ResponseWriter, rc *runtime.Context, br *backend.Request) {
	emit := func(o *backend.Output) error {
		c, _, err := a.choice(o)
		if err != nil {
			return err
		}
		if c.finish != nil {
			return nil // a stop string ended the choice
		}
		c.ids = append(c.ids, o.TokenIDs...)
		a.s.metrics.generationTokens.Add(float64(len(o.TokenIDs)))
		if a.opts.logprobs && len(o.TokenIDs) > 0 {
			lp := a.logprobs(c, o, o.TokenIDs)
			if c.lp == nil {
				c.lp = &vllmwire.CompletionLogProbs{}
			}
			c.lp.TextOffset = append(c.lp.TextOffset, lp.TextOffset...)
			c.lp.TokenLogprobs = append(c.lp.TokenLogprobs, lp.TokenLogprobs...)
			c.lp.Tokens = append(c.lp.Tokens, lp.Tokens...)
			c.lp.TopLogprobs = append(c.lp.TopLogprobs, lp.TopLogprobs...)
		}
		if c.stop != nil {
			c.text.WriteString(a.text(c, o.IsTerminal()))
		}
		if o.IsTerminal() && c.finish == nil {
			return a.finish(c, o)
		}
		return nil
	}
	if err := a.s.eng.Generate(rc, br, emit); err != nil {
		if rc.Err() != nil {
			return // the client went away
		}
		status, msg := engineError(err)
		writeError(w, status, msg, "")
		return
	}
	resp := vllmwire.CompletionResponse{ID: a.id, Object: "text_completion", Created: a.created, Model: a.model}
	completion := 0
	for i, c := range a.choices {
		ch := vllmwire.CompletionChoice{Index: i, Logprobs: c.lp, FinishReason: c.finish, StopReason: c.stopReason}
		switch {
		case c.stop != nil:
			ch.Text = c.text.String()
		case a.opts.detokenize:
			ch.Text, _ = a.s.cfg.Detokenize(c.ids, a.opts.skipSpecial)
		}
		if a.opts.returnTokenIDs {
			ch.PromptTokenIDs, ch.TokenIDs = a.opts.prompt, append([]uint32{}, c.ids...)
		}
		resp.Choices = append(resp.Choices, ch)
		completion += len(c.ids)
	}
	resp.Usage = a.usage(completion)
	writeJSON(w, http.StatusOK, resp)
}

// engineTopLogprob is one alternative of the engine's top_logprobs.
type engineTopLogprob struct {
	TokenID uint32  `json:"token_id"`
	Logprob float64 `json:"logprob"`
}

// logprobs builds the logprobs of toks, o's tokens, advancing c's text
// offset.
func (a *answer) logprobs(c *choiceState, o *backend.Output, toks []uint32) *vllmwire.CompletionLogProbs {
	var top [][]engineTopLogprob
	if len(o.TopLogprobs) > 0 {
		_ = json.Unmarshal(o.TopLogprobs, &top)
	}
	lp := &vllmwire.CompletionLogProbs{TextOffset: []int{}, TokenLogprobs: []float64{}, Tokens: []string{}, TopLogprobs: []map[string]float64{}}
	for j, id := range toks {
		tok := a.tokenString(id)
		lp.Tokens = append(lp.Tokens, tok)
		lp.TextOffset = append(lp.TextOffset, c.textOffset)
		c.textOffset += len(tok)
		v := 0.0
		if j < len(o.LogProbs) {
			v = o.LogProbs[j]
		}
		lp.TokenLogprobs = append(lp.TokenLogprobs, max(v, -9999))
		alts := map[string]float64{tok: max(v, -9999)}
		if j < len(top) {
			for _, t := range top[j] {
				alts[a.tokenString(t.TokenID)] = max(t.Logprob, -9999)
			}
		}
		lp.TopLogprobs = append(lp.TopLogprobs, alts)
	}
	return lp
}

// tokenString is a token as logprobs name it: "token_id:N" when asked
// for (or without a detokenizer), else its text.
func (a *answer) tokenString(id uint32) string {
	if a.opts.asTokenIDs || a.s.cfg.Detokenize == nil {
		return fmt.Sprintf("token_id:%d", id)
	}
	s, err := a.s.cfg.Detokenize([]uint32{id}, false)
	if err != nil {
		return fmt.Sprintf("token_id:%d", id)
	}
	return s
}

// detokenizer turns a growing list of ids into text deltas, holding back
// text that ends in an incomplete character (the incremental scheme of
// Hugging Face's text-generation servers: decode from a prefix offset,
// emit what the newest ids added).
type detokenizer struct {
	f            func([]uint32, bool) (string, error)
	skip         bool
	prefix, read int
}

// next returns the text ids added since the last call.
func (d *detokenizer) next(ids []uint32) string {
	if d.f == nil {
		return ""
	}
	prefixText, err := d.f(ids[d.prefix:d.read], d.skip)
	if err != nil {
		return ""
	}
	newText, err := d.f(ids[d.prefix:], d.skip)
	if err != nil || len(newText) <= len(prefixText) || strings.HasSuffix(newText, "\uFFFD") ||
		!strings.HasPrefix(newText, prefixText) {
		return ""
	}
	d.prefix, d.read = d.read, len(ids)
	return newText[len(prefixText):]
}
