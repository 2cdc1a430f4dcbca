package prefill

import (
	"testing"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// A prefill worker computes one token of one choice: the decode workers
// generate all n choices, so the prefill request must not ask for n.
func TestPrefillRequestAsksForOneChoice(t *testing.T) {
	req := &backend.Request{TokenIDs: []uint32{1, 2, 3}, SamplingOptions: backend.SamplingOptions{N: backend.Ptr(3)}}
	p := prefillRequest(req)
	if p.SamplingOptions.N != nil || *p.StopConditions.MaxTokens != 1 {
		t.Errorf("prefill request n %v, max_tokens %d; want no n and one token", p.SamplingOptions.N, *p.StopConditions.MaxTokens)
	}
	if req.SamplingOptions.N == nil || *req.SamplingOptions.N != 3 {
		t.Error("the decode request lost its n")
	}
}
