package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Limits checked by Validate.
const (
	maxN             = 128 // n, and prompts × n
	maxTopLogprobs   = 20
	maxCompLogprobs  = 5
	maxBestOf        = 20
	maxStopSequences = 32
	maxLogitBias     = 100.0
)

// messageRoles are the roles a chat message may have.
var messageRoles = []string{"system", "developer", "user", "assistant", "tool", "function"}

// Validate checks the request's ranges and required fields (spec §1.6) and
// normalises top_k 0 to -1. Every failure is a *ValidationError.
func (r *ChatCompletionRequest) Validate() error {
	if strings.TrimSpace(r.Model) == "" {
		return invalidParam("model", "model must not be empty")
	}
	if len(r.Messages) == 0 {
		return invalidParam("messages", "messages must not be empty")
	}
	for i, m := range r.Messages {
		if err := validateRole(i, m); err != nil {
			return err
		}
	}
	limit, limitName := r.MaxTokens, "max_tokens"
	if r.MaxCompletionTokens != nil {
		limit, limitName = r.MaxCompletionTokens, "max_completion_tokens"
	}
	err := commonParams{
		temperature: r.Temperature, topP: r.TopP,
		frequencyPenalty: r.FrequencyPenalty, presencePenalty: r.PresencePenalty,
		n: r.N, stop: r.Stop, logitBias: r.LogitBias,
		stream: r.Stream, streamOptions: r.StreamOptions,
	}.validate()
	if err != nil {
		return err
	}
	if err := checkMaxTokens("max_tokens", r.MaxTokens); err != nil {
		return err
	}
	if err := checkMaxTokens("max_completion_tokens", r.MaxCompletionTokens); err != nil {
		return err
	}
	if r.TopLogprobs != nil {
		if v := *r.TopLogprobs; v < 0 || v > maxTopLogprobs {
			return invalidParam("top_logprobs", "top_logprobs must be between 0 and %d, got %d", maxTopLogprobs, v)
		}
		if r.Logprobs == nil || !*r.Logprobs {
			return invalidParam("top_logprobs", "top_logprobs requires logprobs to be true")
		}
	}
	if err := r.CommonExt.validate(limit, limitName); err != nil {
		return err
	}
	if err := r.validateTemplateArgs(); err != nil {
		return err
	}
	if err := r.validateTools(); err != nil {
		return err
	}
	_, err = r.GuidedDecoding()
	return err
}

// Validate checks the request's ranges and required fields (spec §1.6) and
// normalises top_k 0 to -1. Every failure is a *ValidationError.
func (r *CompletionRequest) Validate() error {
	if strings.TrimSpace(r.Model) == "" {
		return invalidParam("model", "model must not be empty")
	}
	if err := validatePrompt(r.Prompt); err != nil {
		return err
	}
	err := commonParams{
		temperature: r.Temperature, topP: r.TopP,
		frequencyPenalty: r.FrequencyPenalty, presencePenalty: r.PresencePenalty,
		n: r.N, stop: r.Stop, logitBias: r.LogitBias,
		stream: r.Stream, streamOptions: r.StreamOptions,
	}.validate()
	if err != nil {
		return err
	}
	n := 1
	if r.N != nil {
		n = *r.N
	}
	if c := r.Prompt.Count(); c*n > maxN {
		return invalidParam("n", "number of prompts × n must be at most %d, got %d × %d = %d", maxN, c, n, c*n)
	}
	if err := checkMaxTokens("max_tokens", r.MaxTokens); err != nil {
		return err
	}
	if r.Logprobs != nil {
		if v := *r.Logprobs; v < 0 || v > maxCompLogprobs {
			return invalidParam("logprobs", "logprobs must be between 0 and %d, got %d", maxCompLogprobs, v)
		}
	}
	if r.BestOf != nil {
		b := *r.BestOf
		if b < 0 || b > maxBestOf {
			return invalidParam("best_of", "best_of must be between 0 and %d, got %d", maxBestOf, b)
		}
		if r.N != nil && b < n {
			return invalidParam("best_of", "best_of must be greater than or equal to n, got best_of=%d and n=%d", b, n)
		}
	}
	if err := r.CommonExt.validate(r.MaxTokens, "max_tokens"); err != nil {
		return err
	}
	_, err = r.GuidedDecoding()
	return err
}

// commonParams are the OpenAI fields chat and completions share.
type commonParams struct {
	temperature, topP, frequencyPenalty, presencePenalty *float64
	n                                                    *int
	stop                                                 *Stop
	logitBias                                            map[string]float64
	stream                                               bool
	streamOptions                                        *StreamOptions
}

func (p commonParams) validate() error {
	for _, c := range []struct {
		name   string
		v      *float64
		lo, hi float64
	}{
		{"temperature", p.temperature, 0, 2},
		{"top_p", p.topP, 0, 1},
		{"frequency_penalty", p.frequencyPenalty, -2, 2},
		{"presence_penalty", p.presencePenalty, -2, 2},
	} {
		if err := checkRange(c.name, c.v, c.lo, c.hi); err != nil {
			return err
		}
	}
	if p.n != nil {
		n := *p.n
		if n < 1 || n > maxN {
			return invalidParam("n", "n must be between 1 and %d, got %d", maxN, n)
		}
		if n > 1 && p.temperature != nil && *p.temperature == 0 {
			return invalidParam("n", "n > 1 requires temperature > 0, got n=%d and temperature=0", n)
		}
	}
	if err := validateLogitBias(p.logitBias); err != nil {
		return err
	}
	if err := validateStop(p.stop); err != nil {
		return err
	}
	if p.streamOptions != nil && !p.stream {
		return invalidParam("stream_options", "stream_options can only be set when stream is true")
	}
	return nil
}

// validate checks the Dynamo extension fields and normalises top_k 0 to
// -1. maxTokens is the effective output limit, named limitName.
func (c *CommonExt) validate(maxTokens *int64, limitName string) error {
	if c.TopK != nil {
		switch k := *c.TopK; {
		case k == 0:
			*c.TopK = -1
		case k < -1:
			return invalidParam("top_k", "top_k must be -1 (disabled) or a positive integer, got %d", k)
		}
	}
	if err := checkRange("min_p", c.MinP, 0, 1); err != nil {
		return err
	}
	if p := c.RepetitionPenalty; p != nil && !(*p > 0 && *p <= 2) {
		return invalidParam("repetition_penalty", "repetition_penalty must be greater than 0 and at most 2, got %v", *p)
	}
	if _, err := c.NvExt.Session(); err != nil {
		return err
	}
	if c.MinTokens != nil && maxTokens != nil && int64(*c.MinTokens) > *maxTokens {
		return invalidParam("min_tokens", "min_tokens must not exceed %s, got min_tokens=%d and %s=%d",
			limitName, *c.MinTokens, limitName, *maxTokens)
	}
	return nil
}

// validateRole checks that message i has a known role.
func validateRole(i int, m Message) error {
	if bytes.Equal(bytes.TrimSpace(m.Raw), []byte("null")) {
		return invalidParam(fmt.Sprintf("messages[%d]", i), "messages[%d]: expected an object, got null", i)
	}
	if m.Role == "" {
		return invalidParam(fmt.Sprintf("messages[%d].role", i), "messages[%d]: role is required", i)
	}
	if !slices.Contains(messageRoles, m.Role) {
		return invalidParam(fmt.Sprintf("messages[%d].role", i), "messages[%d]: unknown role `%s`, expected one of %s", i, m.Role, quoteList(messageRoles))
	}
	return nil
}

// validateTemplateArgs checks chat_template_args / chat_template_kwargs.
func (r *ChatCompletionRequest) validateTemplateArgs() error {
	if present(r.ChatTemplateArgs) && present(r.ChatTemplateKwargs) {
		return invalidParam("chat_template_kwargs", "chat_template_kwargs is an alias of chat_template_args; set only one")
	}
	for _, a := range []struct {
		name string
		raw  json.RawMessage
	}{{"chat_template_args", r.ChatTemplateArgs}, {"chat_template_kwargs", r.ChatTemplateKwargs}} {
		if !present(a.raw) {
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(a.raw, &obj); err != nil || obj == nil {
			return invalidParam(a.name, "%s must be a JSON object", a.name)
		}
		if _, ok := obj["chat_template"]; ok {
			return invalidParam(a.name, "`chat_template` is not supported inside %s", a.name)
		}
	}
	return nil
}

// validatePrompt checks that a completions prompt is given and that no
// list in it is empty. An empty string is allowed.
func validatePrompt(p Prompt) error {
	switch {
	case p.IsZero():
		return invalidParam("prompt", "prompt is required")
	case p.Text != nil:
		return nil
	case p.Texts != nil:
		if len(p.Texts) == 0 {
			return invalidParam("prompt", "prompt must not be an empty list")
		}
	case p.Tokens != nil:
		if len(p.Tokens) == 0 {
			return invalidParam("prompt", "prompt must not be an empty token list")
		}
	default:
		if len(p.TokenSet) == 0 {
			return invalidParam("prompt", "prompt must not be an empty list")
		}
		for i, ids := range p.TokenSet {
			if len(ids) == 0 {
				return invalidParam(fmt.Sprintf("prompt[%d]", i), "prompt[%d] must not be an empty token list", i)
			}
		}
	}
	return nil
}

// validateLogitBias checks that keys are token ids and values in range, in
// key order so the error is deterministic.
func validateLogitBias(bias map[string]float64) error {
	keys := make([]string, 0, len(bias))
	for k := range bias {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if _, err := strconv.ParseUint(k, 10, 32); err != nil {
			return invalidParam("logit_bias", "logit_bias key `%s` is not a token id", k)
		}
		if v := bias[k]; !(v >= -maxLogitBias && v <= maxLogitBias) {
			return invalidParam("logit_bias", "logit_bias value for token %s must be between -100 and 100, got %v", k, v)
		}
	}
	return nil
}

// validateStop allows at most maxStopSequences stop strings, none empty.
func validateStop(s *Stop) error {
	if s == nil {
		return nil
	}
	if len(s.Strings) > maxStopSequences {
		return invalidParam("stop", "stop may hold at most %d sequences, got %d", maxStopSequences, len(s.Strings))
	}
	for i, str := range s.Strings {
		if str == "" {
			return invalidParam("stop", "stop sequence at index %d must not be empty", i)
		}
	}
	return nil
}

// checkRange rejects a value outside [lo, hi] (and NaN).
func checkRange(name string, v *float64, lo, hi float64) error {
	if v != nil && !(*v >= lo && *v <= hi) {
		return invalidParam(name, "%s must be between %v and %v, got %v", name, lo, hi, *v)
	}
	return nil
}

// checkMaxTokens requires a token limit, when given, to be at least 1.
func checkMaxTokens(name string, v *int64) error {
	if v != nil && *v < 1 {
		return invalidParam(name, "%s must be at least 1, got %d", name, *v)
	}
	return nil
}
