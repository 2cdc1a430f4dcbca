package template

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Number filters.

// filterInt is int(default=0): numbers truncate, bools are 0 or 1,
// strings parse as an int or a float; anything else is the default.
func filterInt(_ *evaluator, v any, args []any, kw *OrderedMap) (any, error) {
	def := kwOr(args, kw, 0, "default", int64(0))
	switch x := v.(type) {
	case int64:
		return x, nil
	case float64:
		return int64(x), nil
	case bool:
		i, _ := asInt(x)
		return i, nil
	case string:
		s := strings.TrimSpace(x)
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, nil
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return int64(f), nil
		}
	}
	return def, nil
}

// filterFloat is float(default=0.0).
func filterFloat(_ *evaluator, v any, args []any, kw *OrderedMap) (any, error) {
	def := kwOr(args, kw, 0, "default", 0.0)
	switch x := v.(type) {
	case int64, float64, bool:
		f, _ := toFloat(x)
		return f, nil
	case string:
		if f, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil {
			return f, nil
		}
	}
	return def, nil
}

func filterAbs(_ *evaluator, v any, _ []any, _ *OrderedMap) (any, error) {
	switch x := v.(type) {
	case int64:
		if x < 0 {
			return -x, nil
		}
		return x, nil
	case float64:
		return math.Abs(x), nil
	}
	return nil, fmt.Errorf("template: bad operand type for abs(): '%s'", typeName(v))
}

// filterRound is round(precision=0, method='common'|'ceil'|'floor').
func filterRound(_ *evaluator, v any, args []any, kw *OrderedMap) (any, error) {
	prec, _ := asInt(kwOr(args, kw, 0, "precision", int64(0)))
	method := str(kwOr(args, kw, 1, "method", "common"))
	f, ok := toFloat(v)
	if !ok {
		return nil, fmt.Errorf("template: round expects a number")
	}
	p := math.Pow(10, float64(prec))
	switch method {
	case "ceil":
		return math.Ceil(f*p) / p, nil
	case "floor":
		return math.Floor(f*p) / p, nil
	}
	return math.Round(f*p) / p, nil
}
