package template

import "fmt"

// Higher-order filters: they apply a filter, a test or an attribute
// lookup to each item.

// filterMap is map(attribute=..., default=...) or map(filtername, *args).
func filterMap(e *evaluator, v any, args []any, kw *OrderedMap) (any, error) {
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	if attr, ok := kw.Get("attribute"); ok {
		return e.d.seq(mapAttribute(items, str(attr), kw)), nil
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("template: map needs a filter name or attribute")
	}
	fname := str(args[0])
	out := make([]any, 0, len(items))
	for _, it := range items {
		x, err := e.applyFilter(fname, it, args[1:], NewOrderedMap())
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return e.d.seq(out), nil
}

// mapAttribute is map(attribute=attr, default=...): each item's attribute,
// or the default (when given) where it is undefined.
func mapAttribute(items []any, attr string, kw *OrderedMap) []any {
	def, hasDef := kw.Get("default")
	out := make([]any, 0, len(items))
	for _, it := range items {
		x, _ := getPath(it, attr)
		if isUndef(x) && hasDef {
			x = def
		}
		out = append(out, x)
	}
	return out
}

// selectFilter builds select and reject (byAttr false) and selectattr and
// rejectattr (byAttr true, the first argument names the attribute). They
// keep the items whose test (the next argument with its arguments, or
// truthiness) comes out as keep.
func selectFilter(name string, byAttr, keep bool) filterFunc {
	return func(e *evaluator, v any, args []any, _ *OrderedMap) (any, error) {
		items, err := iterate(v)
		if err != nil {
			return nil, err
		}
		var attr string
		if byAttr {
			if len(args) == 0 {
				return nil, fmt.Errorf("template: %s needs an attribute", name)
			}
			attr, args = str(args[0]), args[1:]
		}
		out := []any{}
		for _, it := range items {
			ok, err := passes(e.d, it, byAttr, attr, args)
			if err != nil {
				return nil, err
			}
			if ok == keep {
				out = append(out, it)
			}
		}
		return e.d.seq(out), nil
	}
}

// passes applies the test test[0](x, test[1:]...), or truthiness when test
// is empty, to the item or, with byAttr, to its attribute attr.
func passes(d Dialect, item any, byAttr bool, attr string, test []any) (bool, error) {
	x := item
	if byAttr {
		x, _ = getPath(item, attr)
	}
	if len(test) == 0 {
		return truthy(x), nil
	}
	return applyTest(d, str(test[0]), x, test[1:])
}
