package loadgen

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestPoissonScheduleMeanAndSpread(t *testing.T) {
	for _, rate := range []float64{1, 500, 20000} {
		s := NewPoissonSchedule(rate, rand.New(rand.NewPCG(42, 7)))
		const n = 20000
		var sum, sumSq float64
		for range n {
			g := s.Next().Seconds()
			if g < 0 {
				t.Fatalf("negative gap %v", g)
			}
			sum += g
			sumSq += g * g
		}
		mean := sum / n
		want := 1 / rate
		if math.Abs(mean-want)/want > 0.05 {
			t.Errorf("rate %g: mean gap %v, want %v ± 5%%", rate, mean, want)
		}
		// An exponential distribution's standard deviation equals its mean.
		sd := math.Sqrt(sumSq/n - mean*mean)
		if math.Abs(sd-want)/want > 0.1 {
			t.Errorf("rate %g: gap standard deviation %v, want %v ± 10%%", rate, sd, want)
		}
	}
}

func TestPoissonScheduleIsReproducible(t *testing.T) {
	a := NewPoissonSchedule(100, rand.New(rand.NewPCG(1, 2)))
	b := NewPoissonSchedule(100, rand.New(rand.NewPCG(1, 2)))
	for range 100 {
		if x, y := a.Next(), b.Next(); x != y {
			t.Fatalf("same seed, different gaps: %v vs %v", x, y)
		}
	}
	var zero time.Duration
	if a.Next() == zero && a.Next() == zero {
		t.Fatal("gaps are all zero")
	}
}
