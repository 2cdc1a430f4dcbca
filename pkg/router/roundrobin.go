package router

import (
	"sync/atomic"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// RoundRobin cycles through the candidates with one shared counter. The
// zero value is ready to use.
type RoundRobin struct {
	next atomic.Uint64
}

var _ Policy = (*RoundRobin)(nil)

// Pick returns the candidate at counter % len(candidates) and advances the
// counter.
func (p *RoundRobin) Pick(_ *backend.Request, candidates []uint64) (uint64, error) {
	n := p.next.Add(1) - 1
	return candidates[n%uint64(len(candidates))], nil
}
