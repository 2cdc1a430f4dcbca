package template

import "fmt"

// method implements one Python method of a receiver of type R:
// recv.name(args..., kw...).
type method[R any] func(recv R, args []any, kw *OrderedMap) (any, error)

// callMethod calls the method name of recv through the method table of
// recv's type: stringMethods, dictMethods or listMethods. The same tables
// decide which attributes getAttr resolves to a bound method, so adding a
// method is adding an entry.
func callMethod(recv any, name string, args []any, kw *OrderedMap) (any, error) {
	switch r := recv.(type) {
	case string:
		if m, ok := stringMethods[name]; ok {
			return m(r, args, kw)
		}
	case *OrderedMap:
		if m, ok := dictMethods[name]; ok {
			return m(r, args, kw)
		}
	case []any:
		if m, ok := listMethods[name]; ok {
			return m(r, args, kw)
		}
	}
	return nil, fmt.Errorf("template: '%s' object has no attribute '%s'", typeName(recv), name)
}
