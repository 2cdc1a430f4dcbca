package vllmapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/mocker"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// Limits of request values (vLLM's defaults).
const (
	// defaultMaxTokens is max_tokens when a request has none (vLLM's
	// CompletionRequest default).
	defaultMaxTokens = 16
	// maxLogprobs is vLLM's default max_logprobs.
	maxLogprobs = 20
)

// completionRequest is the part of vLLM's CompletionRequest the mocker
// reads. Other fields are accepted and ignored, as vLLM does.
type completionRequest struct {
	Model         string          `json:"model"`
	Prompt        json.RawMessage `json:"prompt"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage         *bool `json:"include_usage"`
		ContinuousUsageStats *bool `json:"continuous_usage_stats"`
	} `json:"stream_options"`
	MaxTokens              *int64     `json:"max_tokens"`
	MinTokens              *int64     `json:"min_tokens"`
	IgnoreEOS              bool       `json:"ignore_eos"`
	StopTokenIDs           []int64    `json:"stop_token_ids"`
	Temperature            *float64   `json:"temperature"`
	TopP                   *float64   `json:"top_p"`
	TopK                   *int       `json:"top_k"`
	MinP                   *float64   `json:"min_p"`
	Seed                   *int64     `json:"seed"`
	N                      *int       `json:"n"`
	Logprobs               *int       `json:"logprobs"`
	PresencePenalty        *float64   `json:"presence_penalty"`
	FrequencyPenalty       *float64   `json:"frequency_penalty"`
	RepetitionPenalty      *float64   `json:"repetition_penalty"`
	Echo                   bool       `json:"echo"`
	Suffix                 *string    `json:"suffix"`
	ReturnTokenIDs         *bool      `json:"return_token_ids"`
	ReturnTokensAsTokenIDs *bool      `json:"return_tokens_as_token_ids"`
	SkipSpecialTokens      *bool      `json:"skip_special_tokens"`
	Detokenize             *bool      `json:"detokenize"`
	AddSpecialTokens       *bool      `json:"add_special_tokens"`
	Stop                   stringList `json:"stop"`
	IncludeStopStrInOutput *bool      `json:"include_stop_str_in_output"`
	// StructuredOutputs is vLLM's StructuredOutputsParams: {json, regex,
	// choice, grammar, json_object, whitespace_pattern, structural_tag,
	// ...}, one constraint kind.
	StructuredOutputs json.RawMessage `json:"structured_outputs"`
}

// stringList is a string or a list of strings.
type stringList []string

// UnmarshalJSON accepts a string, a list of strings or null.
func (l *stringList) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*l = []string{s}
		return nil
	}
	var ss []string
	if err := json.Unmarshal(b, &ss); err != nil {
		return errors.New("stop: want a string or a list of strings")
	}
	*l = ss
	return nil
}

// apiError is a request error with its HTTP status and parameter.
type apiError struct {
	status int
	msg    string
	param  string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...), param: param}
}

// options are what shapes an answer besides the engine's outputs.
type options struct {
	n              int
	prompt         []uint32
	returnTokenIDs bool
	asTokenIDs     bool
	logprobs       bool
	detokenize     bool
	skipSpecial    bool
	includeUsage   bool
	continuous     bool
	stopIDs        []uint32
	eosIDs         []uint32 // nil with ignore_eos
	stops          []string // stop strings, applied to the text
	includeStop    bool     // include_stop_str_in_output
}

// build validates req and maps it to a backend.Request.
func (s *Server) build(req *completionRequest) (*backend.Request, *options, *apiError) {
	opts := &options{
		n:              1,
		returnTokenIDs: req.ReturnTokenIDs != nil && *req.ReturnTokenIDs,
		asTokenIDs:     req.ReturnTokensAsTokenIDs != nil && *req.ReturnTokensAsTokenIDs,
		detokenize:     (req.Detokenize == nil || *req.Detokenize) && s.cfg.Detokenize != nil,
		skipSpecial:    req.SkipSpecialTokens == nil || *req.SkipSpecialTokens,
	}
	if req.StreamOptions != nil {
		if !req.Stream {
			return nil, nil, badRequest("stream_options", "Stream options can only be defined when `stream=True`.")
		}
		opts.includeUsage = req.StreamOptions.IncludeUsage != nil && *req.StreamOptions.IncludeUsage
		opts.continuous = req.StreamOptions.ContinuousUsageStats != nil && *req.StreamOptions.ContinuousUsageStats
	}
	switch {
	case req.Echo:
		return nil, nil, badRequest("echo", "echo is not supported by the mocker")
	case req.Suffix != nil:
		return nil, nil, badRequest("suffix", "suffix is not currently supported")
	}
	prompt, err := s.prompt(req.Prompt, req.AddSpecialTokens == nil || *req.AddSpecialTokens)
	if err != nil {
		return nil, nil, err
	}
	opts.prompt = prompt
	if len(prompt) >= s.cfg.ContextLength {
		return nil, nil, badRequest("prompt", "This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.",
			s.cfg.ContextLength, len(prompt))
	}
	maxTokens := int64(defaultMaxTokens)
	if req.MaxTokens != nil {
		maxTokens = *req.MaxTokens
		if maxTokens < 1 {
			return nil, nil, badRequest("max_tokens", "max_tokens must be at least 1, got %d.", maxTokens)
		}
		if room := int64(s.cfg.ContextLength - len(prompt)); maxTokens > room {
			return nil, nil, badRequest("max_tokens", "'max_tokens' or 'max_completion_tokens' is too large: %d. This model's maximum context length is %d tokens and your request has %d input tokens (%d > %d - %d).",
				maxTokens, s.cfg.ContextLength, len(prompt), maxTokens, s.cfg.ContextLength, len(prompt))
		}
	} else {
		maxTokens = min(maxTokens, int64(s.cfg.ContextLength-len(prompt)))
	}
	br := &backend.Request{Model: s.cfg.Model, TokenIDs: prompt}
	br.StopConditions.MaxTokens = backend.Ptr(uint32(maxTokens))
	if m := req.MinTokens; m != nil {
		switch {
		case *m < 0:
			return nil, nil, badRequest("min_tokens", "min_tokens must be greater than or equal to 0, got %d.", *m)
		case *m > maxTokens:
			return nil, nil, badRequest("min_tokens", "min_tokens must be less than or equal to max_tokens=%d, got %d.", maxTokens, *m)
		}
		br.StopConditions.MinTokens = backend.Ptr(uint32(*m))
	}
	for _, id := range req.StopTokenIDs {
		if id < 0 || id > math.MaxUint32 {
			return nil, nil, badRequest("stop_token_ids", "stop_token_ids must be token ids, got %d", id)
		}
		opts.stopIDs = append(opts.stopIDs, uint32(id))
	}
	br.StopConditions.StopTokenIDs = opts.stopIDs
	if req.IgnoreEOS {
		br.StopConditions.IgnoreEOS = backend.Ptr(true)
	} else {
		opts.eosIDs = s.cfg.EOSTokenIDs
	}
	br.EOSTokenIDs = s.cfg.EOSTokenIDs
	if n := req.N; n != nil {
		if *n < 1 || *n > mocker.MaxChoices {
			return nil, nil, badRequest("n", "n must be in [1, %d], got %d.", mocker.MaxChoices, *n)
		}
		opts.n = *n
		br.SamplingOptions.N = backend.Ptr(*n)
	}
	if t := req.Temperature; t != nil && (*t < 0 || math.IsNaN(*t)) {
		return nil, nil, badRequest("temperature", "temperature must be non-negative, got %v.", *t)
	}
	if p := req.TopP; p != nil && !(*p > 0 && *p <= 1) {
		return nil, nil, badRequest("top_p", "top_p must be in (0, 1], got %v.", *p)
	}
	if k := req.TopK; k != nil && *k < -1 {
		return nil, nil, badRequest("top_k", "top_k must be 0 (disable), or at least 1, got %d.", *k)
	}
	if p := req.MinP; p != nil && !(*p >= 0 && *p <= 1) {
		return nil, nil, badRequest("min_p", "min_p must be in [0, 1], got %v.", *p)
	}
	if l := req.Logprobs; l != nil {
		if *l < 0 {
			return nil, nil, badRequest("logprobs", "logprobs must be non-negative, got %d.", *l)
		}
		if *l > maxLogprobs {
			return nil, nil, badRequest("logprobs", "Requested sample logprobs of %d, which is greater than max allowed: %d", *l, maxLogprobs)
		}
		opts.logprobs = true
		br.OutputOptions.Logprobs = backend.Ptr(uint32(*l))
	}
	if len(req.Stop) > 0 {
		if !opts.detokenize {
			return nil, nil, badRequest("stop", "stop strings need the output's text: the mocker has no tokenizer, or detokenize is false")
		}
		opts.stops = req.Stop
		opts.includeStop = req.IncludeStopStrInOutput != nil && *req.IncludeStopStrInOutput
	}
	so := &br.SamplingOptions
	guided, aerr := structuredOutputs(req.StructuredOutputs)
	if aerr != nil {
		return nil, nil, aerr
	}
	so.GuidedDecoding = guided
	so.Temperature, so.TopP, so.TopK, so.MinP, so.Seed = req.Temperature, req.TopP, req.TopK, req.MinP, req.Seed
	so.PresencePenalty, so.FrequencyPenalty, so.RepetitionPenalty = req.PresencePenalty, req.FrequencyPenalty, req.RepetitionPenalty
	br.OutputOptions.SkipSpecialTokens = backend.Ptr(opts.skipSpecial)
	return br, opts, nil
}

// structuredOutputs checks vLLM's structured_outputs and returns it as
// the engine's guided decoding (the same field names; json_object is a
// JSON schema of any object). Exactly one kind of constraint is allowed,
// as vLLM checks. The engine honours json and choice (mocker.GuidedText);
// regex, grammar and structural_tag are accepted and not applied.
func structuredOutputs(raw json.RawMessage) (json.RawMessage, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var so map[string]json.RawMessage
	if err := json.Unmarshal(raw, &so); err != nil {
		return nil, badRequest("structured_outputs", "structured_outputs must be an object: %v", err)
	}
	var kinds []string
	for _, k := range []string{"json", "regex", "choice", "grammar", "json_object", "structural_tag"} {
		if v, ok := so[k]; ok && string(v) != "null" && string(v) != "false" {
			kinds = append(kinds, k)
		}
	}
	switch {
	case len(kinds) == 0:
		return nil, nil
	case len(kinds) > 1:
		return nil, badRequest("structured_outputs", "You can only use one kind of structured outputs constraint but multiple are specified: %s", strings.Join(kinds, ", "))
	case kinds[0] == "json_object":
		return json.RawMessage(`{"json":{"type":"object"}}`), nil
	}
	return raw, nil
}

// prompt reads the prompt: a list of token ids (or a list of one such
// list), or a string (or a list of one string) when the server has a
// tokenizer.
func (s *Server) prompt(raw json.RawMessage, addSpecial bool) ([]uint32, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest("prompt", "Either prompt or prompt_embeds must be provided and non-empty.")
	}
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		return s.encode(text, addSpecial)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, badRequest("prompt", "prompt must be a string, a list of token ids, or a list of them")
	}
	if len(items) == 0 {
		return nil, badRequest("prompt", "Either prompt or prompt_embeds must be provided and non-empty.")
	}
	if ids, ok := tokenIDs(raw); ok {
		return ids, nil
	}
	if len(items) > 1 {
		return nil, badRequest("prompt", "the mocker serves one prompt per request, got %d", len(items))
	}
	if err := json.Unmarshal(items[0], &text); err == nil {
		return s.encode(text, addSpecial)
	}
	if ids, ok := tokenIDs(items[0]); ok && len(ids) > 0 {
		return ids, nil
	}
	return nil, badRequest("prompt", "prompt must be a string, a list of token ids, or a list of them")
}

// tokenIDs reads a JSON list of non-negative integers below 2^32.
func tokenIDs(raw json.RawMessage) ([]uint32, bool) {
	var nums []json.Number
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&nums); err != nil {
		return nil, false
	}
	ids := make([]uint32, len(nums))
	for i, n := range nums {
		v, err := n.Int64()
		if err != nil || v < 0 || v > math.MaxUint32 {
			return nil, false
		}
		ids[i] = uint32(v)
	}
	return ids, true
}

func (s *Server) encode(text string, addSpecial bool) ([]uint32, *apiError) {
	if s.cfg.Tokenize == nil {
		return nil, badRequest("prompt", "the mocker was started without a tokenizer: send the prompt as token ids")
	}
	ids, err := s.cfg.Tokenize(text, addSpecial)
	if err != nil {
		return nil, badRequest("prompt", "tokenize: %v", err)
	}
	if len(ids) == 0 {
		return nil, badRequest("prompt", "Either prompt or prompt_embeds must be provided and non-empty.")
	}
	return ids, nil
}

// choiceState follows one choice of a request.
type choiceState struct {
	ids        []uint32 // generated
	dec        detokenizer
	stop       *stopMatcher // nil without stop strings
	sentPrompt bool
	textOffset int
	text       strings.Builder
	lp         *completionLogprobs // unary: accumulated
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
	a, rc := s.newAnswer(r, "cmpl-", opts)
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
	a := &answer{s: s, rc: rc, opts: opts, id: id, created: time.Now().Unix(), choices: make([]*choiceState, opts.n)}
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

// streamChoice is vLLM's CompletionResponseStreamChoice.
type streamChoice struct {
	Index          int                 `json:"index"`
	Text           string              `json:"text"`
	Logprobs       *completionLogprobs `json:"logprobs"`
	FinishReason   *string             `json:"finish_reason"`
	StopReason     any                 `json:"stop_reason"`
	PromptTokenIDs []uint32            `json:"prompt_token_ids"`
	TokenIDs       []uint32            `json:"token_ids"`
}

// streamChunk is vLLM's CompletionStreamResponse.
type streamChunk struct {
	ID      string         `json:"id"`
	Object  string         `json:"object"`
	Created int64          `json:"created"`
	Model   string         `json:"model"`
	Choices []streamChoice `json:"choices"`
	Usage   *usageInfo     `json:"usage"`
}

// usageChunk is the final usage chunk (vLLM drops its None fields).
type usageChunk struct {
	ID      string         `json:"id"`
	Object  string         `json:"object"`
	Created int64          `json:"created"`
	Model   string         `json:"model"`
	Choices []streamChoice `json:"choices"`
	Usage   usageInfo      `json:"usage"`
}

// usageInfo is vLLM's UsageInfo, with prompt_tokens_details as vLLM
// sends it under --enable-prompt-tokens-details (always, here).
type usageInfo struct {
	PromptTokens        int            `json:"prompt_tokens"`
	TotalTokens         int            `json:"total_tokens"`
	CompletionTokens    int            `json:"completion_tokens"`
	PromptTokensDetails *promptDetails `json:"prompt_tokens_details,omitempty"`
}

// promptDetails is vLLM's PromptTokenUsageInfo.
type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// usage is the answer's usage for completion tokens.
func (a *answer) usage(completion int) usageInfo {
	u := usageInfo{PromptTokens: len(a.opts.prompt), CompletionTokens: completion, TotalTokens: len(a.opts.prompt) + completion}
	if a.cached != nil {
		u.PromptTokensDetails = &promptDetails{CachedTokens: *a.cached}
	}
	return u
}

// completionLogprobs is vLLM's CompletionLogProbs.
type completionLogprobs struct {
	TextOffset    []int                `json:"text_offset"`
	TokenLogprobs []float64            `json:"token_logprobs"`
	Tokens        []string             `json:"tokens"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
}

// stream answers with SSE chunks: one per engine output, then the usage
// chunk when asked for, then [DONE]. The headers go out at once.
func (a *answer) stream(w http.ResponseWriter, r *http.Request, rc *runtime.Context, br *backend.Request) {
	rctl := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_ = rctl.Flush()
	send := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return err
		}
		return rctl.Flush()
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
		ch := streamChoice{Index: i, Text: text, FinishReason: c.finish, StopReason: c.stopReason}
		if !c.sentPrompt {
			ch.PromptTokenIDs, c.sentPrompt = a.opts.prompt, true
		}
		if a.opts.returnTokenIDs {
			ch.TokenIDs = append([]uint32{}, toks...)
		}
		if a.opts.logprobs {
			ch.Logprobs = a.logprobs(c, o, toks)
		}
		chunk := streamChunk{ID: a.id, Object: "text_completion", Created: a.created, Model: a.s.cfg.Model, Choices: []streamChoice{ch}}
		if a.opts.continuous {
			chunk.Usage = &usageInfo{PromptTokens: len(a.opts.prompt), CompletionTokens: len(c.ids), TotalTokens: len(a.opts.prompt) + len(c.ids)}
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
	if err != nil {
		status, msg := engineError(err)
		_ = send(newError(status, msg, ""))
	} else if a.opts.includeUsage {
		completion := 0
		for _, c := range a.choices {
			completion += len(c.ids)
		}
		_ = send(usageChunk{ID: a.id, Object: "text_completion", Created: a.created, Model: a.s.cfg.Model, Choices: []streamChoice{},
			Usage: a.usage(completion)})
	}
	_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
	_ = rctl.Flush()
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

// unaryChoice is vLLM's CompletionResponseChoice.
type unaryChoice struct {
	Index          int                 `json:"index"`
	Text           string              `json:"text"`
	Logprobs       *completionLogprobs `json:"logprobs"`
	FinishReason   *string             `json:"finish_reason"`
	StopReason     any                 `json:"stop_reason"`
	PromptLogprobs any                 `json:"prompt_logprobs"`
	PromptTokenIDs []uint32            `json:"prompt_token_ids"`
	TokenIDs       []uint32            `json:"token_ids"`
}

// unaryResponse is vLLM's CompletionResponse.
type unaryResponse struct {
	ID                string        `json:"id"`
	Object            string        `json:"object"`
	Created           int64         `json:"created"`
	Model             string        `json:"model"`
	Choices           []unaryChoice `json:"choices"`
	ServiceTier       *string       `json:"service_tier"`
	SystemFingerprint *string       `json:"system_fingerprint"`
	Usage             usageInfo     `json:"usage"`
	KVTransferParams  any           `json:"kv_transfer_params"`
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
				c.lp = &completionLogprobs{}
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
	resp := unaryResponse{ID: a.id, Object: "text_completion", Created: a.created, Model: a.s.cfg.Model}
	completion := 0
	for i, c := range a.choices {
		ch := unaryChoice{Index: i, Logprobs: c.lp, FinishReason: c.finish, StopReason: c.stopReason}
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
func (a *answer) logprobs(c *choiceState, o *backend.Output, toks []uint32) *completionLogprobs {
	var top [][]engineTopLogprob
	if len(o.TopLogprobs) > 0 {
		_ = json.Unmarshal(o.TopLogprobs, &top)
	}
	lp := &completionLogprobs{TextOffset: []int{}, TokenLogprobs: []float64{}, Tokens: []string{}, TopLogprobs: []map[string]float64{}}
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

// pinRank reads vLLM's X-data-parallel-rank header into the request's
// routing: the engine runs the request on that rank.
func (s *Server) pinRank(r *http.Request, br *backend.Request) *apiError {
	v := r.Header.Get("X-data-parallel-rank")
	if v == "" {
		return nil
	}
	rank, err := strconv.Atoi(v)
	if n := len(s.eng.KVEventSources()); err != nil || rank < 0 || rank >= n {
		return badRequest("", "X-data-parallel-rank %q: want a rank in [0, %d)", v, n)
	}
	br.Routing = &backend.Routing{DPRank: backend.Ptr(uint32(rank))}
	return nil
}
