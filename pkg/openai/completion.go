package openai

import (
	"bytes"
	"encoding/json"
)

// CompletionRequest is the body of POST /v1/completions.
type CompletionRequest struct {
	Model            string             `json:"model"`
	Prompt           Prompt             `json:"prompt"`
	Suffix           *string            `json:"suffix,omitempty"`
	MaxTokens        *int64             `json:"max_tokens,omitempty"`
	Temperature      *float64           `json:"temperature,omitempty"`
	TopP             *float64           `json:"top_p,omitempty"`
	N                *int               `json:"n,omitempty"`
	Stream           bool               `json:"stream,omitempty"`
	StreamOptions    *StreamOptions     `json:"stream_options,omitempty"`
	Logprobs         *int               `json:"logprobs,omitempty"`
	Echo             *bool              `json:"echo,omitempty"`
	Stop             *Stop              `json:"stop,omitempty"`
	PresencePenalty  *float64           `json:"presence_penalty,omitempty"`
	FrequencyPenalty *float64           `json:"frequency_penalty,omitempty"`
	BestOf           *int               `json:"best_of,omitempty"`
	LogitBias        map[string]float64 `json:"logit_bias,omitempty"`
	Seed             *int64             `json:"seed,omitempty"`
	User             string             `json:"user,omitempty"`

	CommonExt
}

// IncludeUsage reports whether stream_options.include_usage is set.
func (r *CompletionRequest) IncludeUsage() bool {
	return r.StreamOptions != nil && r.StreamOptions.IncludeUsage
}

// Prompt is a completions prompt: a string, a list of strings, a list of
// token ids, or a list of token-id lists. Exactly one field is set.
type Prompt struct {
	Text     *string
	Texts    []string
	Tokens   []uint32
	TokenSet [][]uint32
}

// Count returns how many prompts it holds (the fan-out).
func (p Prompt) Count() int {
	switch {
	case p.Text != nil, p.Tokens != nil:
		return 1
	case p.Texts != nil:
		return len(p.Texts)
	}
	return len(p.TokenSet)
}

// IsZero reports whether no prompt was given.
func (p Prompt) IsZero() bool {
	return p.Text == nil && p.Texts == nil && p.Tokens == nil && p.TokenSet == nil
}

// UnmarshalJSON accepts the four prompt forms.
func (p *Prompt) UnmarshalJSON(b []byte) error {
	*p = Prompt{}
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	if nullInside(b) {
		return &fieldError{field: "prompt", msg: "null is not a string or a token id"}
	}
	var s string
	if json.Unmarshal(b, &s) == nil {
		p.Text = &s
		return nil
	}
	var ss []string
	if json.Unmarshal(b, &ss) == nil {
		if ss == nil {
			ss = []string{}
		}
		p.Texts = ss
		return nil
	}
	var ids []uint32
	if json.Unmarshal(b, &ids) == nil {
		p.Tokens = ids
		return nil
	}
	var set [][]uint32
	if json.Unmarshal(b, &set) == nil {
		p.TokenSet = set
		return nil
	}
	return &fieldError{field: "prompt", msg: "expected a string, an array of strings, an array of token ids, or an array of token-id arrays"}
}

// MarshalJSON writes the form that was given.
func (p Prompt) MarshalJSON() ([]byte, error) {
	switch {
	case p.Text != nil:
		return json.Marshal(*p.Text)
	case p.Texts != nil:
		return json.Marshal(p.Texts)
	case p.Tokens != nil:
		return json.Marshal(p.Tokens)
	}
	return json.Marshal(p.TokenSet)
}

// nullInside reports whether b, an array, holds a null, directly or in an
// array inside it: encoding/json would read it as "" or token id 0.
func nullInside(b []byte) bool {
	var items []json.RawMessage
	if json.Unmarshal(b, &items) != nil {
		return false
	}
	for _, it := range items {
		it = bytes.TrimSpace(it)
		if bytes.Equal(it, []byte("null")) || (len(it) > 0 && it[0] == '[' && nullInside(it)) {
			return true
		}
	}
	return false
}
