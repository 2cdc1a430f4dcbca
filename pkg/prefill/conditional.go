package prefill

import "github.com/dynamo-go/dynamo/pkg/backend"

// Defaults of the conditional policy (the reference system's IslBounding).
const (
	DefaultEffISLThreshold      = 2048
	DefaultEffISLRatioThreshold = 0.7
)

// Conditional configures conditional disaggregation: a request whose
// prompt is short, once the decode worker's cached prefix is taken off,
// is prefilled on the decode worker (the reference system's IslBounding
// policy). Off by default.
type Conditional struct {
	// Enabled turns the policy on (--router-conditional-disagg).
	Enabled bool
	// EffISLThreshold: prefill locally only if the effective prompt length
	// (tokens not cached on the decode worker) is below it (0: 2048).
	EffISLThreshold int
	// EffISLRatioThreshold: ... and only if the effective prompt length
	// over the prompt length is below it (0: 0.7).
	EffISLRatioThreshold float64
}

func (c Conditional) withDefaults() Conditional {
	if c.EffISLThreshold == 0 {
		c.EffISLThreshold = DefaultEffISLThreshold
	}
	if c.EffISLRatioThreshold == 0 {
		c.EffISLRatioThreshold = DefaultEffISLRatioThreshold
	}
	return c
}

// decider answers where the decode router would send a request and how
// much of its prompt that worker holds, changing nothing (*kv.Router).
type decider interface {
	Decide(req *backend.Request) (*backend.Placement, error)
}

// local reports whether req should be prefilled on its decode worker:
// eff_isl = max(0, prompt - overlap * block size), where overlap is the
// cached prefix of the worker the decode router would choose (0 without
// KV routing), and both eff_isl < threshold and eff_isl / prompt < ratio.
func (s *Stage) local(req *backend.Request) bool {
	c := s.cfg.Conditional
	if !c.Enabled {
		return false
	}
	isl := len(req.TokenIDs)
	overlap := 0
	if s.decode != nil {
		if p, err := s.decode.Decide(req); err == nil && p.OverlapBlocks != nil {
			overlap = int(*p.OverlapBlocks)
		}
	}
	eff := max(0, isl-overlap*max(1, s.cfg.BlockSize))
	return eff < c.EffISLThreshold && float64(eff)/float64(max(isl, 1)) < c.EffISLRatioThreshold
}
