package mocker

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// Logprobs are asked for with output_options.logprobs = k: the token and
// k-1 distinct alternatives, descending, a valid distribution, the same
// for the same (seed, position); none without the ask.
func TestLogprobsOfAToken(t *testing.T) {
	vocab := []uint32{10, 11, 12, 13, 14, 15, 16, 17}
	req := &backend.Request{}
	o := backend.Tokens(12)
	withLogprobs(o, req, vocab, 7, 40, 12)
	if o.LogProbs != nil || o.TopLogprobs != nil {
		t.Fatalf("logprobs without the ask: %v %s", o.LogProbs, o.TopLogprobs)
	}
	for _, k := range []uint32{1, 3, 8, 50} {
		req.OutputOptions.Logprobs = &k
		o := backend.Tokens(12)
		withLogprobs(o, req, vocab, 7, 40, 12)
		var top [][]topLogprob
		if err := json.Unmarshal(o.TopLogprobs, &top); err != nil || len(top) != 1 {
			t.Fatalf("k=%d: top_logprobs %s: %v", k, o.TopLogprobs, err)
		}
		want := min(int(k), len(vocab), maxTopLogprobs)
		alts := top[0]
		if len(alts) != want || alts[0].TokenID != 12 || len(o.LogProbs) != 1 || o.LogProbs[0] != alts[0].Logprob {
			t.Fatalf("k=%d: %+v, logprobs %v; want %d alternatives headed by the token", k, alts, o.LogProbs, want)
		}
		seen, sum := map[uint32]bool{}, 0.0
		for i, a := range alts {
			if seen[a.TokenID] || a.Rank != i+1 || a.Logprob >= 0 || (i > 0 && a.Logprob > alts[i-1].Logprob) {
				t.Fatalf("k=%d: alternative %d %+v of %+v", k, i, a, alts)
			}
			seen[a.TokenID] = true
			sum += math.Exp(a.Logprob)
		}
		if sum >= 1 {
			t.Fatalf("k=%d: probabilities sum to %v", k, sum)
		}
		again := backend.Tokens(12)
		withLogprobs(again, req, vocab, 7, 40, 12)
		if string(again.TopLogprobs) != string(o.TopLogprobs) {
			t.Fatalf("k=%d: not deterministic: %s then %s", k, o.TopLogprobs, again.TopLogprobs)
		}
	}
}
