package loadgen

import (
	"math"
	"slices"
	"time"
)

// Summary describes one latency distribution: the sample count, and the
// mean, minimum, exact percentiles and maximum in milliseconds rounded to
// the microsecond.
type Summary struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean"`
	Min   float64 `json:"min"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// summarize sorts samples in place and returns their summary. Percentiles
// are exact (see percentile); an empty input gives a zero Summary.
func summarize(samples []time.Duration) Summary {
	if len(samples) == 0 {
		return Summary{}
	}
	slices.Sort(samples)
	var sum float64
	ms := make([]float64, len(samples))
	for i, d := range samples {
		ms[i] = float64(d) / float64(time.Millisecond)
		sum += ms[i]
	}
	return Summary{
		Count: len(ms),
		Mean:  roundMicro(sum / float64(len(ms))),
		Min:   roundMicro(ms[0]),
		P50:   roundMicro(percentile(ms, 50)),
		P90:   roundMicro(percentile(ms, 90)),
		P99:   roundMicro(percentile(ms, 99)),
		Max:   roundMicro(ms[len(ms)-1]),
	}
}

// percentile returns the p-th percentile (0 ≤ p ≤ 100) of sorted, with
// linear interpolation between the two nearest ranks (the definition of
// numpy.percentile's default and of Excel's PERCENTILE.INC): rank
// p/100·(n−1), counted from 0. It returns NaN for an empty slice.
func percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	rank := p / 100 * float64(n-1)
	lo := int(math.Floor(rank))
	if lo >= n-1 {
		return sorted[n-1]
	}
	if lo < 0 {
		return sorted[0]
	}
	frac := rank - float64(lo)
	return sorted[lo] + frac*(sorted[lo+1]-sorted[lo])
}

// roundMicro rounds milliseconds to three decimals (microseconds).
func roundMicro(ms float64) float64 {
	return math.Round(ms*1000) / 1000
}
