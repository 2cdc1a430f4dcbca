package template

import (
	"fmt"
	"strings"
)

// applyTest evaluates the test name (v is name(args...)).
func applyTest(d Dialect, name string, v any, args []any) (bool, error) {
	argAt := func(i int) any {
		if i < len(args) {
			return args[i]
		}
		return undefined{}
	}
	switch name {
	case "defined":
		return !isUndef(v), nil
	case "undefined":
		return isUndef(v), nil
	case "none":
		return v == nil, nil
	case "true":
		b, ok := v.(bool)
		return ok && b, nil
	case "false":
		b, ok := v.(bool)
		return ok && !b, nil
	case "boolean":
		_, ok := v.(bool)
		return ok, nil
	case "string":
		_, ok := v.(string)
		return ok, nil
	case "number":
		switch v.(type) {
		case int64, float64:
			return true, nil
		}
		return false, nil
	case "integer":
		_, ok := v.(int64)
		return ok, nil
	case "float":
		_, ok := v.(float64)
		return ok, nil
	case "mapping":
		_, ok := v.(*OrderedMap)
		return ok, nil
	case "sequence":
		switch v.(type) {
		case []any, string, *OrderedMap:
			return true, nil
		}
		return false, nil
	case "iterable":
		switch v.(type) {
		case []any, string, *OrderedMap:
			return true, nil
		}
		return false, nil
	case "callable":
		switch v.(type) {
		case *macro, builtin, *boundMethod:
			return true, nil
		}
		return false, nil
	case "odd", "even":
		n, ok := v.(int64)
		if !ok {
			return false, fmt.Errorf("template: %s test needs an integer", name)
		}
		return (n%2 != 0) == (name == "odd"), nil
	case "divisibleby":
		n, _ := asInt(v)
		d, _ := asInt(argAt(0))
		return d != 0 && n%d == 0, nil
	case "lower":
		s, ok := v.(string)
		return ok && s == strings.ToLower(s), nil
	case "upper":
		s, ok := v.(string)
		return ok && s == strings.ToUpper(s), nil
	case "equalto", "eq", "==", "sameas":
		return equal(v, argAt(0)), nil
	case "ne", "!=":
		return !equal(v, argAt(0)), nil
	case "in":
		return contains(d, argAt(0), v)
	case "lt", "<", "le", "<=", "gt", ">", "ge", ">=", "lessthan", "greaterthan":
		c, err := compare(v, argAt(0))
		if err != nil {
			return false, err
		}
		switch name {
		case "lt", "<", "lessthan":
			return c < 0, nil
		case "le", "<=":
			return c <= 0, nil
		case "gt", ">", "greaterthan":
			return c > 0, nil
		}
		return c >= 0, nil
	}
	return false, fmt.Errorf("template: no test named '%s'", name)
}
