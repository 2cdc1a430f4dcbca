package mocker

import (
	"encoding/json"
	"math"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// maxTopLogprobs caps the alternatives a token's logprobs list (OpenAI's
// top_logprobs allows 20).
const maxTopLogprobs = 20

// topLogprob is one alternative of a token's top logprobs, in the
// engines' shape (LLMEngineOutput.top_logprobs[i][j]).
type topLogprob struct {
	Rank    int     `json:"rank"`
	TokenID uint32  `json:"token_id"`
	Logprob float64 `json:"logprob"`
}

// withLogprobs adds to o, whose one token tok was generated at sequence
// position, its logprob and its k most likely alternatives (tok first),
// when the request asks for logprobs (output_options.logprobs = k).
// They are a pure function of (seed, position, tok) and a valid
// distribution: tok has probability in [0.5, 0.95), each next alternative
// at most half of what is left, so the k probabilities sum to less than 1.
func withLogprobs(o *backend.Output, req *backend.Request, vocab []uint32, seed int64, position int, tok uint32) {
	k := req.OutputOptions.Logprobs
	if k == nil {
		return
	}
	n := min(max(int(*k), 1), maxTopLogprobs)
	u := float64(splitmix64(uint64(seed)^uint64(position)^0x5bd1e995)>>11) / (1 << 53)
	p := 0.5 + 0.45*u
	top := []topLogprob{{Rank: 1, TokenID: tok, Logprob: math.Log(p)}}
	rest := 1 - p
	seen := map[uint32]bool{tok: true}
	for i := 1; len(top) < n && i < 64*n; i++ {
		alt := DeterministicTokenIn(vocab, seed^int64(i)*0x9e3779b9, position)
		if seen[alt] {
			continue
		}
		seen[alt] = true
		rest /= 2
		top = append(top, topLogprob{Rank: len(top) + 1, TokenID: alt, Logprob: math.Log(rest)})
	}
	o.LogProbs = []float64{top[0].Logprob}
	if b, err := json.Marshal([][]topLogprob{top}); err == nil {
		o.TopLogprobs = b
	}
}
