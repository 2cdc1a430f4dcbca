package mocker

import (
	"math"
	"time"
)

// Polynomial timing model of the reference mocker (§6.5), in milliseconds
// of simulated GPU time.

// prefillTime is the time to prefill n new (uncached) prompt tokens:
// 4.209989e-07·n² + 1.518344e-02·n + 16.50142 ms, and 0 for n = 0.
func prefillTime(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	x := float64(n)
	return msToDuration(4.209989e-07*x*x + 1.518344e-02*x + 16.50142)
}

// decodeTime is the time of one decode pass with activeKVTokens of
// totalKVTokens in use: max(1, −25.74·p² + 54.01·p + 5.74) ms,
// p = min(1, active/total).
func decodeTime(activeKVTokens, totalKVTokens int) time.Duration {
	p := 0.0
	if totalKVTokens > 0 {
		p = math.Min(1, float64(activeKVTokens)/float64(totalKVTokens))
	}
	return msToDuration(math.Max(1, -25.74*p*p+54.01*p+5.74))
}

func msToDuration(ms float64) time.Duration {
	return time.Duration(ms * float64(time.Millisecond))
}

// scale divides a simulated duration by the speedup ratio.
func scale(d time.Duration, speedup float64) time.Duration {
	return time.Duration(float64(d) / speedup)
}
