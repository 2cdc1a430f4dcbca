package template

import "fmt"

// listMethods are the list methods that templates can call (lists are
// immutable in the sandbox).
var listMethods = map[string]method[[]any]{
	"index": listIndex,
	"count": listCount,
}

// listIndex is list.index(x): the first position of x, or an error.
func listIndex(l []any, args []any, kw *OrderedMap) (any, error) {
	want := kwOr(args, kw, 0, "x", nil)
	for i, x := range l {
		if equal(x, want) {
			return int64(i), nil
		}
	}
	return nil, fmt.Errorf("template: value is not in list")
}

// listCount is list.count(x): how many items equal x.
func listCount(l []any, args []any, kw *OrderedMap) (any, error) {
	want := kwOr(args, kw, 0, "x", nil)
	n := int64(0)
	for _, x := range l {
		if equal(x, want) {
			n++
		}
	}
	return n, nil
}
