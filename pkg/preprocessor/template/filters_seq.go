package template

import (
	"fmt"
	"strings"
)

// Sequence filters: they iterate their input (a list, a dict's keys, or
// nothing for undefined).

// filterLength is length (count): len() of a string, list or dict; 0 for
// undefined.
func filterLength(_ *evaluator, v any, _ []any, _ *OrderedMap) (any, error) {
	switch x := v.(type) {
	case string:
		return int64(len([]rune(x))), nil
	case []any:
		return int64(len(x)), nil
	case *OrderedMap:
		return int64(x.Len()), nil
	case undefined:
		return int64(0), nil
	}
	return nil, fmt.Errorf("template: object of type '%s' has no len()", typeName(v))
}

func filterList(_ *evaluator, v any, _ []any, _ *OrderedMap) (any, error) {
	return iterate(v)
}

// filterFirst is first: the first item, or undefined when there is none.
func filterFirst(_ *evaluator, v any, _ []any, _ *OrderedMap) (any, error) {
	items, err := iterate(v)
	if err != nil || len(items) == 0 {
		return undefined{}, err
	}
	return items[0], nil
}

// filterLast is last: the last item, or undefined when there is none.
// Generators are not reversible.
func filterLast(_ *evaluator, v any, _ []any, _ *OrderedMap) (any, error) {
	if _, ok := v.(*generator); ok {
		return nil, fmt.Errorf("template: 'generator' object is not reversible")
	}
	items, err := iterate(v)
	if err != nil || len(items) == 0 {
		return undefined{}, err
	}
	return items[len(items)-1], nil
}

// filterJoin is join(d="", attribute=None).
func filterJoin(e *evaluator, v any, args []any, kw *OrderedMap) (any, error) {
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	sep := str(kwOr(args, kw, 0, "d", ""))
	attr := kwOr(args, kw, 1, "attribute", nil)
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = e.d.str(attrOf(it, attr))
	}
	return strings.Join(parts, sep), nil
}

// filterReverse is reverse: a reversed string, or the items in reverse.
func filterReverse(e *evaluator, v any, _ []any, _ *OrderedMap) (any, error) {
	if s, ok := v.(string); ok {
		r := []rune(s)
		for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
			r[i], r[j] = r[j], r[i]
		}
		return string(r), nil
	}
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	out := make([]any, len(items))
	for i, it := range items {
		out[len(items)-1-i] = it
	}
	return e.d.seq(out), nil
}

// filterBatch is batch(linecount): the items in lists of linecount.
func filterBatch(_ *evaluator, v any, args []any, kw *OrderedMap) (any, error) {
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	n, _ := asInt(kwOr(args, kw, 0, "linecount", int64(1)))
	out := []any{}
	for i := 0; i < len(items); i += int(n) {
		end := min(i+int(n), len(items))
		out = append(out, append([]any{}, items[i:end]...))
	}
	return out, nil
}

// filterSum is sum(attribute=None, start=0).
func filterSum(e *evaluator, v any, args []any, kw *OrderedMap) (any, error) {
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	acc := kwOr(args, kw, 1, "start", int64(0))
	attr := kwOr(args, kw, 0, "attribute", nil)
	for _, it := range items {
		if acc, err = binop(e.d, "+", acc, attrOf(it, attr)); err != nil {
			return nil, err
		}
	}
	return acc, nil
}

// filterItems is items: a dict's (key, value) pairs; nothing for undefined.
func filterItems(e *evaluator, v any, _ []any, _ *OrderedMap) (any, error) {
	m, ok := v.(*OrderedMap)
	if !ok {
		if isUndef(v) {
			return []any{}, nil
		}
		return nil, fmt.Errorf("template: can only get item pairs from a mapping")
	}
	return e.d.seq(dictItems(m)), nil
}
