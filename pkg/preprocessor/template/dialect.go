package template

import (
	"fmt"
	"strings"
)

// Dialect selects whose Jinja behaviour a template reproduces where Python
// jinja2 and the JavaScript @huggingface/jinja disagree. Parsing, scoping,
// tojson and everything else are shared; the differences are the switch
// points in this file.
type Dialect int

const (
	// DialectPython follows Python jinja2 as transformers'
	// apply_chat_template configures it. It is the zero value and the
	// default: True/False/None, Python repr for lists and dicts, int + str
	// raises, map/select/reject/items return one-shot generators.
	DialectPython Dialect = iota

	// DialectHFJS follows @huggingface/jinja 0.5.x (huggingface.js,
	// transformers.js): true/false, JSON-like lists and dicts with null
	// and undefined inside, str + any concatenates, filters return real
	// lists, membership in lists does not equate booleans with numbers,
	// and null is a literal.
	DialectHFJS
)

// String returns the dialect's name.
func (d Dialect) String() string {
	switch d {
	case DialectPython:
		return "python"
	case DialectHFJS:
		return "hfjs"
	}
	return fmt.Sprintf("Dialect(%d)", int(d))
}

// valid reports whether d is a known dialect.
func (d Dialect) valid() bool { return d == DialectPython || d == DialectHFJS }

// str converts v to a string the way the dialect's `|string`, `~` and
// string concatenation do.
func (d Dialect) str(v any) string {
	if d == DialectPython {
		return str(v)
	}
	switch x := v.(type) {
	case string:
		return x
	case undefined:
		return ""
	case nil:
		return "null"
	case bool:
		if x {
			return "true"
		}
		return "false"
	case []any, *OrderedMap, *namespace:
		var sb strings.Builder
		if err := writeJSON(&sb, x, jsonOpts{itemSep: ", ", keySep: ": ", undef: "undefined"}, 0); err == nil {
			return sb.String()
		}
	}
	return str(v)
}

// output is what {{ v }} writes. @huggingface/jinja writes nothing for
// null; Python writes "None".
func (d Dialect) output(v any) string {
	if d == DialectHFJS && v == nil {
		return ""
	}
	return d.str(v)
}

// seq wraps a filter's result list: a one-shot generator in Python (no
// len(), no indexing), a plain list in @huggingface/jinja.
func (d Dialect) seq(items []any) any {
	if d == DialectHFJS {
		return items
	}
	return &generator{items}
}

// concat implements @huggingface/jinja's `+` with a string operand, which
// converts the other operand; Python raises a TypeError instead.
func (d Dialect) concat(l, r any) (string, bool) {
	if d != DialectHFJS || l == nil || r == nil {
		return "", false
	}
	_, ls := l.(string)
	_, rs := r.(string)
	if !ls && !rs {
		return "", false
	}
	return d.str(l) + d.str(r), true
}

// member is the equality behind `in` for lists. @huggingface/jinja
// compares with ===, so 1 is not true and 0 is not false; Python's ==
// equates them.
func (d Dialect) member(x, item any) bool {
	if d == DialectHFJS {
		_, xb := x.(bool)
		_, ib := item.(bool)
		if xb != ib {
			return false
		}
	}
	return equal(x, item)
}

// literal resolves names that are constants in the dialect but not in
// Jinja2 itself (only when no variable of that name exists).
func (d Dialect) literal(name string) (any, bool) {
	if d == DialectHFJS && name == "null" {
		return nil, true
	}
	return nil, false
}

// kwargsMethods are the str methods that accept keyword arguments in
// CPython (up to 3.12; 3.13 adds str.replace(count=)).
var kwargsMethods = map[string]bool{"split": true, "rsplit": true, "splitlines": true, "format": true}

// checkMethodKwargs rejects keyword arguments to methods that take
// positional arguments only in Python. @huggingface/jinja accepts them.
func (d Dialect) checkMethodKwargs(m *boundMethod, kw *OrderedMap) error {
	if d != DialectPython || kw.Len() == 0 || kwargsMethods[m.name] {
		return nil
	}
	return fmt.Errorf("template: %s.%s() takes no keyword arguments", typeName(m.recv), m.name)
}
