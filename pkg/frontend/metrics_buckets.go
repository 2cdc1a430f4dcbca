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

// metricBucketSpec is a generated-bucket default and the NAME of its
// DYN_METRICS_<NAME>_{MIN,MAX,COUNT} overrides.
type metricBucketSpec struct {
	name     string
	min, max float64
	count    int
}

// The "new" baseline bucket defaults of spec §6.5. The cached-tokens
// histogram shares the input-sequence buckets.
var (
	requestDurationBucketSpec = metricBucketSpec{"REQUEST_DURATION", 1, 512, 10}
	inputSequenceBucketSpec   = metricBucketSpec{"INPUT_SEQUENCE", 50, 128000, 12}
	outputSequenceBucketSpec  = metricBucketSpec{"OUTPUT_SEQUENCE", 50, 32000, 10}
	ttftBucketSpec            = metricBucketSpec{"TTFT", 0.001, 480, 18}
	itlBucketSpec             = metricBucketSpec{"ITL", 0.001, 2, 13}
)

// buckets applies the environment overrides read through env (nil: none;
// an empty value counts as unset), validates the result and generates the
// buckets. An unparsable or out-of-range value is an error that names the
// variable.
func (s metricBucketSpec) buckets(env func(string) string) ([]float64, error) {
	minVar := "DYN_METRICS_" + s.name + "_MIN"
	maxVar := "DYN_METRICS_" + s.name + "_MAX"
	countVar := "DYN_METRICS_" + s.name + "_COUNT"
	min, max, count := s.min, s.max, s.count
	if env != nil {
		var err error
		if min, err = envFloat(env, minVar, min); err != nil {
			return nil, err
		}
		if max, err = envFloat(env, maxVar, max); err != nil {
			return nil, err
		}
		if count, err = envInt(env, countVar, count); err != nil {
			return nil, err
		}
	}
	switch {
	case math.IsNaN(min) || math.IsInf(min, 0) || min <= 0:
		return nil, fmt.Errorf("frontend: %s=%v: must be a finite number > 0", minVar, min)
	case math.IsNaN(max) || math.IsInf(max, 0):
		return nil, fmt.Errorf("frontend: %s=%v: must be a finite number", maxVar, max)
	case max <= min:
		return nil, fmt.Errorf("frontend: %s=%v: must be greater than %s=%v", maxVar, max, minVar, min)
	case count < 1 || count > maxMetricBuckets:
		return nil, fmt.Errorf("frontend: %s=%d: must be between 1 and %d", countVar, count, maxMetricBuckets)
	}
	return LogBuckets(min, max, count), nil
}

// envFloat reads name through env, returning def when it is unset.
func envFloat(env func(string) string, name string, def float64) (float64, error) {
	raw := env(name)
	if raw == "" {
		return def, nil
	}
	v, err := strconv.ParseFloat(raw, 64)
	if err != nil {
		return 0, fmt.Errorf("frontend: %s=%q: %w", name, raw, numErrCause(err))
	}
	return v, nil
}

// envInt reads name through env, returning def when it is unset.
func envInt(env func(string) string, name string, def int) (int, error) {
	raw := env(name)
	if raw == "" {
		return def, nil
	}
	v, err := strconv.Atoi(raw)
	if err != nil {
		return 0, fmt.Errorf("frontend: %s=%q: %w", name, raw, numErrCause(err))
	}
	return v, nil
}

// numErrCause strips strconv's "parsing ..." wrapper, which repeats the value.
func numErrCause(err error) error {
	if ne, ok := errors.AsType[*strconv.NumError](err); ok {
		return ne.Err
	}
	return err
}
