package template

import (
	"fmt"
	"sort"
	"strings"
)

// Ordering filters. Unless case_sensitive is set, strings compare
// lowercased.

// filterSort is sort(reverse=False, case_sensitive=False, attribute=None),
// a stable sort of a copy of the items.
func filterSort(_ *evaluator, v any, args []any, kw *OrderedMap) (any, error) {
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	items = append([]any(nil), items...)
	rev := truthy(kwOr(args, kw, 0, "reverse", false))
	cs := truthy(kwOr(args, kw, 1, "case_sensitive", false))
	attr := kwOr(args, kw, 2, "attribute", nil)
	var serr error
	sort.SliceStable(items, func(i, j int) bool {
		a, b := sortKey(items[i], attr, cs), sortKey(items[j], attr, cs)
		if equal(a, b) {
			return false
		}
		return before(a, b, rev, &serr)
	})
	return items, serr
}

// filterDictSort is dictsort(case_sensitive=False, by='key',
// reverse=False): a dict's (key, value) pairs sorted by key or value.
func filterDictSort(_ *evaluator, v any, args []any, kw *OrderedMap) (any, error) {
	m, ok := v.(*OrderedMap)
	if !ok {
		return nil, fmt.Errorf("template: dictsort expects a mapping")
	}
	cs := truthy(kwOr(args, kw, 0, "case_sensitive", false))
	by := str(kwOr(args, kw, 1, "by", "key"))
	rev := truthy(kwOr(args, kw, 2, "reverse", false))
	items := dictItems(m)
	idx := 0
	if by == "value" {
		idx = 1
	}
	var serr error
	sort.SliceStable(items, func(i, j int) bool {
		a, b := items[i].([]any)[idx], items[j].([]any)[idx]
		return before(sortKey(a, nil, cs), sortKey(b, nil, cs), rev, &serr)
	})
	return items, serr
}

// sortKey is what v sorts by: its attribute attr (when not nil), folded
// to lower case unless cs.
func sortKey(v, attr any, cs bool) any {
	v = attrOf(v, attr)
	if !cs {
		v = foldCase(v)
	}
	return v
}

// before reports whether a sorts before b (after it, when rev). A
// comparison error is kept in *serr and the sort goes on.
func before(a, b any, rev bool, serr *error) bool {
	c, err := compare(a, b)
	if err != nil {
		*serr = err
	}
	if rev {
		return c > 0
	}
	return c < 0
}

// filterUnique is unique(case_sensitive=False, attribute=None): the items
// without later duplicates.
func filterUnique(e *evaluator, v any, args []any, kw *OrderedMap) (any, error) {
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	cs := truthy(kwOr(args, kw, 0, "case_sensitive", false))
	attr := kwOr(args, kw, 1, "attribute", nil)
	var out, seen []any
	for _, it := range items {
		k := sortKey(it, attr, cs)
		if !containsEqual(seen, k) {
			seen = append(seen, k)
			out = append(out, it)
		}
	}
	return e.d.seq(out), nil
}

// containsEqual reports whether some item of list equals x.
func containsEqual(list []any, x any) bool {
	for _, it := range list {
		if equal(it, x) {
			return true
		}
	}
	return false
}

func filterMin(_ *evaluator, v any, _ []any, _ *OrderedMap) (any, error) {
	return extreme(v, func(c int) bool { return c < 0 })
}

func filterMax(_ *evaluator, v any, _ []any, _ *OrderedMap) (any, error) {
	return extreme(v, func(c int) bool { return c > 0 })
}

// extreme returns the first item that no later item beats, where better
// judges compare(item, best) with strings folded; undefined when empty.
func extreme(v any, better func(c int) bool) (any, error) {
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return undefined{}, nil
	}
	best := items[0]
	for _, it := range items[1:] {
		c, err := compare(foldCase(it), foldCase(best))
		if err != nil {
			return nil, err
		}
		if better(c) {
			best = it
		}
	}
	return best, nil
}

func foldCase(v any) any {
	if s, ok := v.(string); ok {
		return strings.ToLower(s)
	}
	return v
}
