package router

import (
	"math/rand/v2"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// Random picks uniformly among the candidates.
type Random struct{}

var _ Policy = Random{}

// Pick returns a random candidate.
func (Random) Pick(_ *backend.Request, candidates []uint64) (uint64, error) {
	return candidates[rand.IntN(len(candidates))], nil
}
