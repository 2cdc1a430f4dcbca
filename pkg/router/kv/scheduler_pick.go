package kv

import (
	"math"
	"math/rand/v2"
)

// pick returns the index of the chosen cost (spec §4.3). costs is sorted
// by worker and never empty.
func (s *Scheduler) pick(costs []workerCost, temperature float64) int {
	if temperature == 0 {
		return s.pickMin(costs)
	}
	return s.pickSoftmax(costs, temperature)
}

// pickMin: the candidates with the minimum logit (exact equality); among
// several, those with the smallest tree size; among several of those, one
// uniformly at random.
func (s *Scheduler) pickMin(costs []workerCost) int {
	minLogit := math.Inf(1)
	for _, c := range costs {
		minLogit = min(minLogit, c.Logit)
	}
	minTree := math.MaxInt
	for _, c := range costs {
		if c.Logit == minLogit {
			minTree = min(minTree, c.TreeSize)
		}
	}
	var tied []int
	for i, c := range costs {
		if c.Logit == minLogit && c.TreeSize == minTree {
			tied = append(tied, i)
		}
	}
	if len(tied) == 1 {
		return tied[0]
	}
	return tied[s.randIntN(len(tied))]
}

// pickSoftmax samples from the softmax of the negated, range-normalised
// logits at temperature t: uniform if all logits are equal, else
// z_i = −(logit_i/(max−min))/t, p_i = exp(z_i − max z)/Σ. The first index
// whose cumulative probability reaches u ∈ [0,1) wins; the last is the
// fallback.
func (s *Scheduler) pickSoftmax(costs []workerCost, t float64) int {
	p := softmaxProbs(costs, t)
	u := s.randFloat()
	cum := 0.0
	for i, pi := range p {
		cum += pi
		if u <= cum {
			return i
		}
	}
	return len(p) - 1
}

// softmaxProbs is the distribution pickSoftmax draws from.
func softmaxProbs(costs []workerCost, t float64) []float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range costs {
		lo, hi = min(lo, c.Logit), max(hi, c.Logit)
	}
	p := make([]float64, len(costs))
	if lo == hi {
		for i := range p {
			p[i] = 1 / float64(len(p))
		}
		return p
	}
	zMax := math.Inf(-1)
	for i, c := range costs {
		p[i] = -(c.Logit / (hi - lo)) / t
		zMax = max(zMax, p[i])
	}
	sum := 0.0
	for i := range p {
		p[i] = math.Exp(p[i] - zMax)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}

func (s *Scheduler) randIntN(n int) int {
	if s.rnd == nil {
		return rand.IntN(n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rnd.IntN(n)
}

func (s *Scheduler) randFloat() float64 {
	if s.rnd == nil {
		return rand.Float64()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rnd.Float64()
}
