package frontend

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// LogBuckets returns histogram buckets as Dynamo generates them (spec §6.5):
// 0 first, then for i in 1..count-1 the value min·(max/min)^(i/(count-1))
// rounded to 2 significant figures, appended only if it differs from the
// previous bucket. min itself is not a bucket (i starts at 1); max is the
// last one (rounded). The result has at most count values: rounding may merge
// neighbours.
//
// count <= 0 gives nil and count == 1 gives [0]. min must be > 0 and max >
// min; other inputs give unspecified buckets.
func LogBuckets(min, max float64, count int) []float64 {
	if count <= 0 {
		return nil
	}
	buckets := make([]float64, 1, count)
	logMin, logMax := math.Log(min), math.Log(max)
	for i := 1; i < count; i++ {
		v := roundTwoSigFigs(math.Exp(logMin + (logMax-logMin)*float64(i)/float64(count-1)))
		if v != buckets[len(buckets)-1] {
			buckets = append(buckets, v)
		}
	}
	return buckets
}

// roundTwoSigFigs rounds v to 2 significant figures. The result is built as
// an integer times or divided by an exact power of ten, so it equals the
// float64 that the decimal literal (0.0022, 130000, ...) parses to.
func roundTwoSigFigs(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	e := int(math.Floor(math.Log10(math.Abs(v)))) - 1 // v/10^e has 2 digits before the point
	if e >= 0 {
		p := math.Pow10(e)
		return math.Round(v/p) * p
	}
	p := math.Pow10(-e)
	return math.Round(v*p) / p
}

// maxMetricBuckets bounds DYN_METRICS_<NAME>_COUNT, as in Dynamo.
const maxMetricBuckets = 512

// tokenizerLatencyBucketsMs are the fixed buckets of tokenizer_latency_ms.
var tokenizerLatencyBucketsMs = []float64{0.5, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512}

// BucketRange generates a histogram's buckets with LogBuckets(Min, Max,
// Count).
type BucketRange struct {
	Min, Max float64
	Count    int
}

// The histograms whose buckets can be changed, by the NAME of their
// DYN_METRICS_<NAME>_{MIN,MAX,COUNT} overrides (spec §6.5). The
// cached-tokens histogram shares the input-sequence buckets.
const (
	HistogramRequestDuration = "REQUEST_DURATION"
	HistogramInputSequence   = "INPUT_SEQUENCE"
	HistogramOutputSequence  = "OUTPUT_SEQUENCE"
	HistogramTTFT            = "TTFT"
	HistogramITL             = "ITL"
)

// defaultBuckets are the "new" baseline bucket defaults of spec §6.5.
var defaultBuckets = map[string]BucketRange{
	HistogramRequestDuration: {1, 512, 10},
	HistogramInputSequence:   {50, 128000, 12},
	HistogramOutputSequence:  {50, 32000, 10},
	HistogramTTFT:            {0.001, 480, 18},
	HistogramITL:             {0.001, 2, 13},
}

// BucketsFromEnv reads the DYN_METRICS_<NAME>_{MIN,MAX,COUNT} overrides
// through env (cmd/frontend passes os.Getenv; an empty value counts as
// unset): each histogram with any of them set gets its default range with
// those values replaced, for MetricsConfig.Buckets. An unparsable value is
// an error that names the variable.
func BucketsFromEnv(env func(string) string) (map[string]BucketRange, error) {
	out := map[string]BucketRange{}
	for name, r := range defaultBuckets {
		set := false
		for _, f := range []struct {
			suffix string
			read   func(string) error
		}{
			{"_MIN", func(raw string) (err error) { r.Min, err = strconv.ParseFloat(raw, 64); return err }},
			{"_MAX", func(raw string) (err error) { r.Max, err = strconv.ParseFloat(raw, 64); return err }},
			{"_COUNT", func(raw string) (err error) { r.Count, err = strconv.Atoi(raw); return err }},
		} {
			v := "DYN_METRICS_" + name + f.suffix
			raw := env(v)
			if raw == "" {
				continue
			}
			if err := f.read(raw); err != nil {
				return nil, fmt.Errorf("frontend: %s=%q: %w", v, raw, numErrCause(err))
			}
			set = true
		}
		if set {
			out[name] = r
		}
	}
	return out, nil
}

// histogramBuckets returns the buckets of histogram name: the override in
// ranges, else the default. An out-of-range value is an error that names
// its DYN_METRICS_ variable.
func histogramBuckets(name string, ranges map[string]BucketRange) ([]float64, error) {
	r, ok := ranges[name]
	if !ok {
		r = defaultBuckets[name]
	}
	v := "DYN_METRICS_" + name
	switch {
	case math.IsNaN(r.Min) || math.IsInf(r.Min, 0) || r.Min <= 0:
		return nil, fmt.Errorf("frontend: %s_MIN=%v: must be a finite number > 0", v, r.Min)
	case math.IsNaN(r.Max) || math.IsInf(r.Max, 0):
		return nil, fmt.Errorf("frontend: %s_MAX=%v: must be a finite number", v, r.Max)
	case r.Max <= r.Min:
		return nil, fmt.Errorf("frontend: %s_MAX=%v: must be greater than %s_MIN=%v", v, r.Max, v, r.Min)
	case r.Count < 1 || r.Count > maxMetricBuckets:
		return nil, fmt.Errorf("frontend: %s_COUNT=%d: must be between 1 and %d", v, r.Count, maxMetricBuckets)
	}
	return LogBuckets(r.Min, r.Max, r.Count), nil
}

// numErrCause strips strconv's "parsing ..." wrapper, which repeats the value.
func numErrCause(err error) error {
	if ne, ok := errors.AsType[*strconv.NumError](err); ok {
		return ne.Err
	}
	return err
}
