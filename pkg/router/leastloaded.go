package router

import (
	"errors"
	"sync/atomic"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// errNoLoads is LeastLoaded's error before Watch.
var errNoLoads = errors.New("least-loaded policy: no router to read loads from (Watch was not called)")

// loadReader is where LeastLoaded reads the requests in flight
// (*PushRouter).
type loadReader interface {
	Loads(ids []uint64) ([]Load, int)
}

// LeastLoaded picks the candidate with the fewest requests in flight from
// this frontend, then the fewest prompt tokens waiting for their first
// output, then (among equals) each in turn; one that refused a request as
// full lately (Load.Refusing) only when all did. Its loads are those of the
// router it serves: call Watch with that router before it serves
// requests.
type LeastLoaded struct {
	loads loadReader
	next  atomic.Uint64 // rotates among equally loaded candidates
}

var _ Policy = (*LeastLoaded)(nil)

// Watch makes p read the loads of r, the router p picks for.
func (p *LeastLoaded) Watch(r *PushRouter) { p.loads = r }

// Pick returns the least loaded candidate.
func (p *LeastLoaded) Pick(_ *backend.Request, candidates []uint64) (uint64, error) {
	if p.loads == nil {
		return 0, errNoLoads
	}
	loads, _ := p.loads.Loads(candidates)
	start := int(p.next.Add(1)-1) % len(candidates)
	best := start
	for k := 1; k < len(candidates); k++ {
		i := (start + k) % len(candidates)
		if lighter(loads[i], loads[best]) {
			best = i
		}
	}
	return candidates[best], nil
}

// lighter orders loads: not refusing first, then fewer requests, then
// fewer prompt tokens in prefill.
func lighter(a, b Load) bool {
	switch {
	case a.Refusing != b.Refusing:
		return !a.Refusing
	case a.Requests != b.Requests:
		return a.Requests < b.Requests
	}
	return a.PrefillTokens < b.PrefillTokens
}
