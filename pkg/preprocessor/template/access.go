package template

import (
	"fmt"
	"strings"
)

// getAttr resolves obj.name as jinja2's sandbox does: a dict's methods
// (items, get, ...) before its keys, a namespace's or loop's attributes,
// str and list methods; anything else is undefined. Accessing an
// attribute of an undefined value raises.
func getAttr(obj any, name string) (any, error) {
	switch o := obj.(type) {
	case undefined:
		return nil, fmt.Errorf("%w: '%s' has no attribute '%s'", ErrUndefined, o.name, name)
	case *OrderedMap:
		if _, ok := dictMethods[name]; ok {
			return &boundMethod{o, name}, nil
		}
		if v, ok := o.m[name]; ok {
			return v, nil
		}
		return undefined{name}, nil
	case *namespace:
		if v, ok := o.m.m[name]; ok {
			return v, nil
		}
		return undefined{name}, nil
	case *loopInfo:
		return o.attr(name), nil
	case string:
		if _, ok := stringMethods[name]; ok {
			return &boundMethod{o, name}, nil
		}
	case []any:
		if _, ok := listMethods[name]; ok {
			return &boundMethod{o, name}, nil
		}
	}
	return undefined{name}, nil
}

// getItem resolves obj[key]: dict keys, list and string indexes (negative
// from the end); a miss is undefined, as in jinja2.
func getItem(obj, key any) (any, error) {
	switch o := obj.(type) {
	case *generator:
		return undefined{}, nil // jinja2's getitem turns the TypeError into Undefined
	case undefined:
		return nil, fmt.Errorf("%w: '%s' has no attribute '%s'", ErrUndefined, o.name, str(key))
	case *OrderedMap:
		if s, ok := key.(string); ok {
			if v, ok := o.m[s]; ok {
				return v, nil
			}
			if _, ok := dictMethods[s]; ok {
				return &boundMethod{o, s}, nil
			}
			return undefined{s}, nil
		}
		return undefined{str(key)}, nil
	case []any:
		if n, ok := asInt(key); ok {
			if n < 0 {
				n += int64(len(o))
			}
			if n >= 0 && n < int64(len(o)) {
				return o[n], nil
			}
		}
		return undefined{}, nil
	case string:
		if n, ok := asInt(key); ok {
			rs := []rune(o)
			if n < 0 {
				n += int64(len(rs))
			}
			if n >= 0 && n < int64(len(rs)) {
				return string(rs[n]), nil
			}
			return undefined{}, nil
		}
		if s, ok := key.(string); ok {
			return getAttr(o, s)
		}
	case *namespace, *loopInfo:
		if s, ok := key.(string); ok {
			return getAttr(o, s)
		}
	}
	return undefined{}, nil
}

func sliceBounds(n int, start, stop, step any) (int, int, int, error) {
	st := 1
	if step != nil {
		s, ok := asInt(step)
		if !ok || s == 0 {
			return 0, 0, 0, fmt.Errorf("template: slice step must be a non-zero integer")
		}
		st = int(s)
	}
	norm := func(v any, def int) int {
		if v == nil {
			return def
		}
		i, _ := asInt(v)
		x := int(i)
		if x < 0 {
			x += n
			if x < 0 {
				if st < 0 {
					return -1
				}
				return 0
			}
		}
		if x >= n {
			if st < 0 {
				return n - 1
			}
			return n
		}
		return x
	}
	if st > 0 {
		return norm(start, 0), norm(stop, n), st, nil
	}
	return norm(start, n-1), norm(stop, -1), st, nil
}

func slice(obj, start, stop, step any) (any, error) {
	var items []any
	isStr := false
	switch o := obj.(type) {
	case []any:
		items = o
	case string:
		isStr = true
		for _, r := range o {
			items = append(items, string(r))
		}
	case undefined:
		return nil, undefErr(o)
	default:
		return nil, fmt.Errorf("template: '%s' object is not subscriptable", typeName(obj))
	}
	a, b, st, err := sliceBounds(len(items), start, stop, step)
	if err != nil {
		return nil, err
	}
	out := []any{}
	if st > 0 {
		for i := a; i < b; i += st {
			out = append(out, items[i])
		}
	} else {
		for i := a; i > b; i += st {
			out = append(out, items[i])
		}
	}
	if isStr {
		var sb strings.Builder
		for _, s := range out {
			sb.WriteString(s.(string))
		}
		return sb.String(), nil
	}
	return out, nil
}
