package template

import (
	"fmt"
	"math"
	"strings"
)

// binop applies a binary operator with the dialect's semantics.
func binop(d Dialect, op string, l, r any) (any, error) {
	switch op {
	case "==":
		return equal(l, r), nil
	case "!=":
		return !equal(l, r), nil
	case "in", "not in":
		b, err := contains(d, r, l)
		if err != nil {
			return nil, err
		}
		return b != (op == "not in"), nil
	case "~":
		return d.str(l) + d.str(r), nil
	case "<", ">", "<=", ">=":
		if isUndef(l) {
			return nil, undefErr(l)
		}
		if isUndef(r) {
			return nil, undefErr(r)
		}
		c, err := compare(l, r)
		if err != nil {
			return nil, fmt.Errorf("template: %w", err)
		}
		switch op {
		case "<":
			return c < 0, nil
		case ">":
			return c > 0, nil
		case "<=":
			return c <= 0, nil
		}
		return c >= 0, nil
	}
	if isUndef(l) {
		return nil, undefErr(l)
	}
	if isUndef(r) {
		return nil, undefErr(r)
	}
	switch op {
	case "+":
		if s, ok := d.concat(l, r); ok {
			return s, nil
		}
		switch a := l.(type) {
		case string:
			if b, ok := r.(string); ok {
				return a + b, nil
			}
		case []any:
			if b, ok := r.([]any); ok {
				out := make([]any, 0, len(a)+len(b))
				return append(append(out, a...), b...), nil
			}
		}
	case "*":
		if s, ok := l.(string); ok {
			if n, ok := r.(int64); ok {
				if n < 0 {
					n = 0
				}
				return strings.Repeat(s, int(n)), nil
			}
		}
		if lst, ok := l.([]any); ok {
			if n, ok := r.(int64); ok {
				out := []any{}
				for i := int64(0); i < n; i++ {
					out = append(out, lst...)
				}
				return out, nil
			}
		}
	}
	if isNumber(l) && isNumber(r) {
		ia, aInt := asInt(l)
		ib, bInt := asInt(r)
		if aInt && bInt {
			switch op {
			case "+":
				return ia + ib, nil
			case "-":
				return ia - ib, nil
			case "*":
				return ia * ib, nil
			case "/":
				if ib == 0 {
					return nil, fmt.Errorf("template: division by zero")
				}
				return float64(ia) / float64(ib), nil
			case "//":
				if ib == 0 {
					return nil, fmt.Errorf("template: integer division or modulo by zero")
				}
				q := ia / ib
				if (ia%ib != 0) && ((ia < 0) != (ib < 0)) {
					q--
				}
				return q, nil
			case "%":
				if ib == 0 {
					return nil, fmt.Errorf("template: integer division or modulo by zero")
				}
				m := ia % ib
				if m != 0 && ((m < 0) != (ib < 0)) {
					m += ib
				}
				return m, nil
			case "**":
				if ib >= 0 {
					res := int64(1)
					for i := int64(0); i < ib; i++ {
						res *= ia
					}
					return res, nil
				}
				return math.Pow(float64(ia), float64(ib)), nil
			}
		}
		fa, _ := toFloat(l)
		fb, _ := toFloat(r)
		switch op {
		case "+":
			return fa + fb, nil
		case "-":
			return fa - fb, nil
		case "*":
			return fa * fb, nil
		case "/":
			if fb == 0 {
				return nil, fmt.Errorf("template: float division by zero")
			}
			return fa / fb, nil
		case "//":
			if fb == 0 {
				return nil, fmt.Errorf("template: float floor division by zero")
			}
			return math.Floor(fa / fb), nil
		case "%":
			if fb == 0 {
				return nil, fmt.Errorf("template: float modulo")
			}
			m := math.Mod(fa, fb)
			if m != 0 && ((m < 0) != (fb < 0)) {
				m += fb
			}
			return m, nil
		case "**":
			return math.Pow(fa, fb), nil
		}
	}
	return nil, fmt.Errorf("template: unsupported operand type(s) for %s: '%s' and '%s'", op, typeName(l), typeName(r))
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// contains is the `in` operator: item in container.
func contains(d Dialect, container, item any) (bool, error) {
	switch c := container.(type) {
	case string:
		s, ok := item.(string)
		if !ok {
			return false, fmt.Errorf("template: 'in <string>' requires string as left operand, not %s", typeName(item))
		}
		return strings.Contains(c, s), nil
	case []any:
		for _, x := range c {
			if d.member(x, item) {
				return true, nil
			}
		}
		return false, nil
	case *OrderedMap:
		s, ok := item.(string)
		if !ok {
			return false, nil
		}
		_, found := c.m[s]
		return found, nil
	case undefined:
		return false, nil
	case *generator:
		for _, x := range c.items {
			if d.member(x, item) {
				return true, nil
			}
		}
		return false, nil
	case *namespace:
		s, _ := item.(string)
		_, found := c.m.m[s]
		return found, nil
	}
	return false, fmt.Errorf("template: argument of type '%s' is not iterable", typeName(container))
}
