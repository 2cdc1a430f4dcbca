package router

import (
	"context"
	"math/rand/v2"
)

// Random picks uniformly among the candidates.
type Random struct{}

var _ Policy = Random{}

// Pick returns a random candidate.
func (Random) Pick(_ context.Context, candidates []uint64) (uint64, error) {
	return candidates[rand.IntN(len(candidates))], nil
}
