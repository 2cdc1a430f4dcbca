package loadgen

import (
	"math/rand/v2"
	"time"
)

// PoissonSchedule draws the inter-arrival gaps of a Poisson process:
// independent, exponentially distributed with mean 1/rate.
type PoissonSchedule struct {
	rng  *rand.Rand
	mean float64 // seconds
}

// NewPoissonSchedule returns a schedule of rate arrivals per second
// (rate > 0) drawing from rng.
func NewPoissonSchedule(rate float64, rng *rand.Rand) *PoissonSchedule {
	return &PoissonSchedule{rng: rng, mean: 1 / rate}
}

// Next returns the gap between the previous arrival and the next.
func (s *PoissonSchedule) Next() time.Duration {
	return time.Duration(s.rng.ExpFloat64() * s.mean * float64(time.Second))
}
