package loadgen

import (
	"math"
	"testing"
	"time"
)

func TestPercentileExact(t *testing.T) {
	tests := []struct {
		sorted []float64
		p      float64
		want   float64
	}{
		{[]float64{7}, 0, 7},
		{[]float64{7}, 50, 7},
		{[]float64{7}, 100, 7},
		{[]float64{1, 2, 3, 4}, 0, 1},
		{[]float64{1, 2, 3, 4}, 50, 2.5},
		{[]float64{1, 2, 3, 4}, 90, 3.7},
		{[]float64{1, 2, 3, 4}, 100, 4},
		{[]float64{1, 2, 3, 4, 5}, 50, 3},
		{[]float64{1, 2, 3, 4, 5}, 25, 2},
		{[]float64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}, 90, 91},
		{[]float64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}, 99, 99.1},
		{[]float64{0, 100}, 99, 99},
	}
	for _, tt := range tests {
		if got := percentile(tt.sorted, tt.p); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("percentile(%v, %g) = %g, want %g", tt.sorted, tt.p, got, tt.want)
		}
	}
	if got := percentile(nil, 50); !math.IsNaN(got) {
		t.Errorf("percentile(nil) = %g, want NaN", got)
	}
}

func TestSummarizeSortsAndRoundsToMicroseconds(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	got := summarize([]time.Duration{ms(4), ms(1), ms(3), ms(2), 1234567 * time.Nanosecond})
	want := Summary{Count: 5, Mean: 2.247, Min: 1, P50: 2, P90: 3.6, P99: 3.96, Max: 4}
	if got != want {
		t.Errorf("summarize = %+v, want %+v", got, want)
	}
	if got := summarize(nil); got != (Summary{}) {
		t.Errorf("summarize(nil) = %+v, want zero", got)
	}
}
