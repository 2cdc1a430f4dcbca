package vllmapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/mocker"
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
