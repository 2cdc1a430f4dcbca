package template

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Values inside the interpreter follow Python: nil is None, bool, int64,
// float64, string, []any (list; tuples are lists too), *OrderedMap (dict),
// plus the interpreter's own undefined, *namespace, *macro, *boundMethod,
// builtin and *loopInfo.

// undefined is Jinja2's default Undefined: renders as "", is false, iterates
// as empty, and raises on arithmetic and attribute access.
type undefined struct{ name string }

type namespace struct{ m *OrderedMap }

type builtin func(e *evaluator, args []any, kw *OrderedMap) (any, error)

// generator is a one-shot Python generator/iterator (what select, map,
// selectattr, items … return in Jinja2): iterable, always true, no len(),
// not subscriptable.
type generator struct{ items []any }

type boundMethod struct {
	recv any
	name string
}

func isUndef(v any) bool { _, ok := v.(undefined); return ok }

func truthy(v any) bool {
	switch x := v.(type) {
	case nil, undefined:
		return false
	case bool:
		return x
	case int64:
		return x != 0
	case float64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case *OrderedMap:
		return x.Len() > 0
	}
	return true
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case undefined:
		return "Undefined"
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case []any:
		return "list"
	case *OrderedMap:
		return "dict"
	case *generator:
		return "generator"
	}
	return fmt.Sprintf("%T", v)
}

// str is Python's str().
func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case undefined:
		return ""
	case *namespace:
		return "<Namespace " + repr(x.m) + ">"
	}
	return repr(v)
}

func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	a := math.Abs(f)
	if a != 0 && (a < 1e-4 || a >= 1e16) {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		return s
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

func reprString(s string) string {
	q := byte('\'')
	if strings.Contains(s, "'") && !strings.Contains(s, "\"") {
		q = '"'
	}
	var sb strings.Builder
	sb.WriteByte(q)
	for _, r := range s {
		switch {
		case r == '\\':
			sb.WriteString(`\\`)
		case r == rune(q):
			sb.WriteByte('\\')
			sb.WriteRune(r)
		case r == '\n':
			sb.WriteString(`\n`)
		case r == '\r':
			sb.WriteString(`\r`)
		case r == '\t':
			sb.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&sb, `\x%02x`, r)
		default:
			sb.WriteRune(r)
		}
	}
	sb.WriteByte(q)
	return sb.String()
}

// repr is Python's repr().
func repr(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case undefined:
		return "Undefined"
	case *generator:
		return "<generator object>"
	case bool:
		if x {
			return "True"
		}
		return "False"
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return formatFloat(x)
	case string:
		return reprString(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = repr(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case *OrderedMap:
		parts := make([]string, 0, x.Len())
		for _, k := range x.keys {
			parts = append(parts, reprString(k)+": "+repr(x.m[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case *macro:
		return "<Macro " + x.name + ">"
	case *loopInfo:
		return fmt.Sprintf("<LoopContext %d/%d>", x.index0+1, x.length)
	}
	return fmt.Sprintf("%v", v)
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

func isNumber(v any) bool {
	switch v.(type) {
	case int64, float64, bool:
		return true
	}
	return false
}

// equal is Python ==.
func equal(a, b any) bool {
	if isNumber(a) && isNumber(b) {
		fa, _ := toFloat(a)
		fb, _ := toFloat(b)
		ia, aok := a.(int64)
		ib, bok := b.(int64)
		if aok && bok {
			return ia == ib
		}
		return fa == fb
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case undefined:
		return isUndef(b)
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case *OrderedMap:
		y, ok := b.(*OrderedMap)
		if !ok || x.Len() != y.Len() {
			return false
		}
		for _, k := range x.keys {
			yv, ok := y.m[k]
			if !ok || !equal(x.m[k], yv) {
				return false
			}
		}
		return true
	}
	return a == b
}

// compare is Python's ordering; it fails for unorderable types.
func compare(a, b any) (int, error) {
	if isNumber(a) && isNumber(b) {
		ia, aok := a.(int64)
		ib, bok := b.(int64)
		if aok && bok {
			return cmpInt(ia, ib), nil
		}
		fa, _ := toFloat(a)
		fb, _ := toFloat(b)
		switch {
		case fa < fb:
			return -1, nil
		case fa > fb:
			return 1, nil
		}
		return 0, nil
	}
	if sa, ok := a.(string); ok {
		if sb, ok := b.(string); ok {
			return strings.Compare(sa, sb), nil
		}
	}
	if la, ok := a.([]any); ok {
		if lb, ok := b.([]any); ok {
			for i := 0; i < len(la) && i < len(lb); i++ {
				if !equal(la[i], lb[i]) {
					return compare(la[i], lb[i])
				}
			}
			return cmpInt(int64(len(la)), int64(len(lb))), nil
		}
	}
	return 0, fmt.Errorf("'<' not supported between instances of '%s' and '%s'", typeName(a), typeName(b))
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

type jsonOpts struct {
	indent      string
	hasIndent   bool
	itemSep     string
	keySep      string
	sortKeys    bool
	ensureASCII bool
	undef       string // how to write undefined; "" means it is an error
}

// writeJSON is Python json.dumps with the given options.
func writeJSON(sb *strings.Builder, v any, o jsonOpts, depth int) error {
	nl := func(d int) {
		if o.hasIndent {
			sb.WriteByte('\n')
			for i := 0; i < d; i++ {
				sb.WriteString(o.indent)
			}
		}
	}
	switch x := v.(type) {
	case nil:
		sb.WriteString("null")
	case bool:
		if x {
			sb.WriteString("true")
		} else {
			sb.WriteString("false")
		}
	case int64:
		sb.WriteString(strconv.FormatInt(x, 10))
	case float64:
		switch {
		case math.IsNaN(x):
			sb.WriteString("NaN")
		case math.IsInf(x, 1):
			sb.WriteString("Infinity")
		case math.IsInf(x, -1):
			sb.WriteString("-Infinity")
		default:
			sb.WriteString(formatFloat(x))
		}
	case string:
		writeJSONString(sb, x, o.ensureASCII)
	case []any:
		if len(x) == 0 {
			sb.WriteString("[]")
			return nil
		}
		sb.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				sb.WriteString(o.itemSep)
			}
			nl(depth + 1)
			if err := writeJSON(sb, e, o, depth+1); err != nil {
				return err
			}
		}
		nl(depth)
		sb.WriteByte(']')
	case *OrderedMap:
		if x.Len() == 0 {
			sb.WriteString("{}")
			return nil
		}
		keys := x.keys
		if o.sortKeys {
			keys = append([]string(nil), keys...)
			sort.Strings(keys)
		}
		sb.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				sb.WriteString(o.itemSep)
			}
			nl(depth + 1)
			writeJSONString(sb, k, o.ensureASCII)
			sb.WriteString(o.keySep)
			if err := writeJSON(sb, x.m[k], o, depth+1); err != nil {
				return err
			}
		}
		nl(depth)
		sb.WriteByte('}')
	case *namespace:
		return writeJSON(sb, x.m, o, depth)
	case undefined:
		if o.undef == "" {
			return fmt.Errorf("Object of type Undefined is not JSON serializable")
		}
		sb.WriteString(o.undef)
	default:
		return fmt.Errorf("Object of type %s is not JSON serializable", typeName(v))
	}
	return nil
}

func writeJSONString(sb *strings.Builder, s string, ascii bool) {
	sb.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			sb.WriteString(`\"`)
		case '\\':
			sb.WriteString(`\\`)
		case '\n':
			sb.WriteString(`\n`)
		case '\r':
			sb.WriteString(`\r`)
		case '\t':
			sb.WriteString(`\t`)
		case '\b':
			sb.WriteString(`\b`)
		case '\f':
			sb.WriteString(`\f`)
		default:
			switch {
			case r < 0x20:
				fmt.Fprintf(sb, `\u%04x`, r)
			case ascii && r > 0x7e:
				if r >= 0x10000 {
					r -= 0x10000
					fmt.Fprintf(sb, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
				} else {
					fmt.Fprintf(sb, `\u%04x`, r)
				}
			case r == utf8.RuneError:
				sb.WriteRune(r)
			default:
				sb.WriteRune(r)
			}
		}
	}
	sb.WriteByte('"')
}
