package preprocessor

import (
	"encoding/json"

	"github.com/dynamo-go/dynamo/pkg/openai"
)

// engineTopLogprob is one alternative as engines report it
// (LLMEngineOutput.top_logprobs[i][j]).
type engineTopLogprob struct {
	Rank    int     `json:"rank"`
	TokenID uint32  `json:"token_id"`
	Token   *string `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// tokenText returns the text of one token id, as the logprobs show it.
func (m *Model) tokenText(id uint32) string {
	if m.tok == nil {
		return "" // not reached: logprobs are refused without a tokenizer
	}
	s, err := m.tok.Decode([]uint32{id}, false)
	if err != nil {
		return ""
	}
	return s
}

func textBytes(s string) []int {
	b := make([]int, len(s))
	for i := 0; i < len(s); i++ {
		b[i] = int(s[i])
	}
	return b
}

// topOf decodes the engine's top logprobs of a delta; a malformed value
// gives none (logprobs are informative, never a reason to fail a stream).
func topOf(raw json.RawMessage) [][]engineTopLogprob {
	if len(raw) == 0 {
		return nil
	}
	var top [][]engineTopLogprob
	if json.Unmarshal(raw, &top) != nil {
		return nil
	}
	return top
}

func (m *Model) alternative(a engineTopLogprob) (string, []int) {
	tok := m.tokenText(a.TokenID)
	if a.Token != nil {
		tok = *a.Token
	}
	b := a.Bytes
	if b == nil {
		b = textBytes(tok)
	}
	return tok, b
}

// chatLogprobs converts a delta's logprobs to the chat shape.
type chatLogprobs struct{}

func (chatLogprobs) convert(m *Model, d Delta) *openai.ChatLogprobs {
	if len(d.LogProbs) == 0 {
		return nil
	}
	top := topOf(d.TopLogprobs)
	lp := &openai.ChatLogprobs{Content: make([]openai.TokenLogprob, 0, len(d.TokenIDs))}
	for i, id := range d.TokenIDs {
		if i >= len(d.LogProbs) {
			break
		}
		tok := m.tokenText(id)
		e := openai.TokenLogprob{Token: tok, Logprob: d.LogProbs[i], Bytes: textBytes(tok), TopLogprobs: []openai.TopLogprob{}}
		if i < len(top) {
			for _, a := range top[i] {
				t, b := m.alternative(a)
				e.TopLogprobs = append(e.TopLogprobs, openai.TopLogprob{Token: t, Logprob: a.Logprob, Bytes: b})
			}
		}
		lp.Content = append(lp.Content, e)
	}
	return lp
}

// completionLogprobs converts a delta's logprobs to the legacy
// completions shape; offset is the choice's text length before the delta.
func (m *Model) completionLogprobs(d Delta, offset int) *openai.CompletionLogprobs {
	if len(d.LogProbs) == 0 {
		return nil
	}
	top := topOf(d.TopLogprobs)
	lp := &openai.CompletionLogprobs{}
	for i, id := range d.TokenIDs {
		if i >= len(d.LogProbs) {
			break
		}
		tok := m.tokenText(id)
		lp.Tokens = append(lp.Tokens, tok)
		lp.TokenLogprobs = append(lp.TokenLogprobs, d.LogProbs[i])
		lp.TextOffset = append(lp.TextOffset, offset)
		offset += len(tok)
		alts := map[string]float64{}
		if i < len(top) {
			for _, a := range top[i] {
				t, _ := m.alternative(a)
				alts[t] = a.Logprob
			}
		}
		lp.TopLogprobs = append(lp.TopLogprobs, alts)
	}
	return lp
}
