package template

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// kwOr returns keyword name, else positional i, else def.
func kwOr(args []any, kw *OrderedMap, i int, name string, def any) any {
	if v, ok := kw.Get(name); ok {
		return v
	}
	if i >= 0 && i < len(args) {
		return args[i]
	}
	return def
}

func (e *evaluator) applyFilter(name string, v any, args []any, kw *OrderedMap) (any, error) {
	if name != "default" && name != "d" && name != "string" && name != "tojson" && name != "length" && name != "count" && name != "list" && name != "safe" {
		if u, ok := v.(undefined); ok && name != "items" && name != "join" && name != "first" && name != "last" && name != "map" && name != "selectattr" && name != "rejectattr" && name != "select" && name != "reject" && name != "unique" && name != "sort" && name != "reverse" {
			return nil, undefErr(u)
		}
	}
	switch name {
	case "safe", "e", "escape", "forceescape":
		if name == "safe" {
			return v, nil
		}
		s := e.d.str(v)
		r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "\"", "&#34;", "'", "&#39;")
		return r.Replace(s), nil
	case "default", "d":
		def := kwOr(args, kw, 0, "default_value", "")
		boolean := truthy(kwOr(args, kw, 1, "boolean", false))
		if isUndef(v) || (boolean && !truthy(v)) {
			return def, nil
		}
		return v, nil
	case "length", "count":
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
	case "string":
		return e.d.str(v), nil
	case "upper":
		return strings.ToUpper(e.d.str(v)), nil
	case "lower":
		return strings.ToLower(e.d.str(v)), nil
	case "title":
		return pyTitle(e.d.str(v)), nil
	case "capitalize":
		s := []rune(strings.ToLower(e.d.str(v)))
		if len(s) > 0 {
			s[0] = unicode.ToUpper(s[0])
		}
		return string(s), nil
	case "trim":
		chars := kwOr(args, kw, 0, "chars", nil)
		if c, ok := chars.(string); ok {
			return strings.Trim(e.d.str(v), c), nil
		}
		return strings.TrimSpace(e.d.str(v)), nil
	case "tojson":
		return toJSON(e.d, v, args, kw)
	case "list":
		return iterate(v)
	case "first":
		items, err := iterate(v)
		if err != nil || len(items) == 0 {
			return undefined{}, err
		}
		return items[0], nil
	case "last":
		if _, ok := v.(*generator); ok {
			return nil, fmt.Errorf("template: 'generator' object is not reversible")
		}
		items, err := iterate(v)
		if err != nil || len(items) == 0 {
			return undefined{}, err
		}
		return items[len(items)-1], nil
	case "join":
		items, err := iterate(v)
		if err != nil {
			return nil, err
		}
		sep := str(kwOr(args, kw, 0, "d", ""))
		attr := kwOr(args, kw, 1, "attribute", nil)
		parts := make([]string, len(items))
		for i, it := range items {
			if attr != nil {
				it, _ = getPath(it, str(attr))
			}
			parts[i] = e.d.str(it)
		}
		return strings.Join(parts, sep), nil
	case "items":
		m, ok := v.(*OrderedMap)
		if !ok {
			if isUndef(v) {
				return []any{}, nil
			}
			return nil, fmt.Errorf("template: can only get item pairs from a mapping")
		}
		return e.d.seq(dictItems(m)), nil
	case "dictsort":
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
			if !cs {
				a, b = foldCase(a), foldCase(b)
			}
			c, err := compare(a, b)
			if err != nil {
				serr = err
			}
			if rev {
				return c > 0
			}
			return c < 0
		})
		return items, serr
	case "sort":
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
			a, b := items[i], items[j]
			if attr != nil {
				a, _ = getPath(a, str(attr))
				b, _ = getPath(b, str(attr))
			}
			if !cs {
				a, b = foldCase(a), foldCase(b)
			}
			if equal(a, b) {
				return false
			}
			c, err := compare(a, b)
			if err != nil {
				serr = err
			}
			if rev {
				return c > 0
			}
			return c < 0
		})
		return items, serr
	case "reverse":
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
	case "unique":
		items, err := iterate(v)
		if err != nil {
			return nil, err
		}
		cs := truthy(kwOr(args, kw, 0, "case_sensitive", false))
		attr := kwOr(args, kw, 1, "attribute", nil)
		var out, seen []any
		for _, it := range items {
			k := it
			if attr != nil {
				k, _ = getPath(it, str(attr))
			}
			if !cs {
				k = foldCase(k)
			}
			dup := false
			for _, s := range seen {
				if equal(s, k) {
					dup = true
					break
				}
			}
			if !dup {
				seen = append(seen, k)
				out = append(out, it)
			}
		}
		return e.d.seq(out), nil
	case "map":
		items, err := iterate(v)
		if err != nil {
			return nil, err
		}
		out := make([]any, 0, len(items))
		if attr, ok := kw.Get("attribute"); ok {
			def, hasDef := kw.Get("default")
			for _, it := range items {
				x, _ := getPath(it, str(attr))
				if isUndef(x) && hasDef {
					x = def
				}
				out = append(out, x)
			}
			return e.d.seq(out), nil
		}
		if len(args) == 0 {
			return nil, fmt.Errorf("template: map needs a filter name or attribute")
		}
		fname := str(args[0])
		for _, it := range items {
			x, err := e.applyFilter(fname, it, args[1:], NewOrderedMap())
			if err != nil {
				return nil, err
			}
			out = append(out, x)
		}
		return e.d.seq(out), nil
	case "selectattr", "rejectattr", "select", "reject":
		items, err := iterate(v)
		if err != nil {
			return nil, err
		}
		isAttr := strings.HasSuffix(name, "attr")
		want := strings.HasPrefix(name, "select")
		rest := args
		var attr string
		if isAttr {
			if len(args) == 0 {
				return nil, fmt.Errorf("template: %s needs an attribute", name)
			}
			attr = str(args[0])
			rest = args[1:]
		}
		out := []any{}
		for _, it := range items {
			x := it
			if isAttr {
				x, _ = getPath(it, attr)
			}
			var ok bool
			if len(rest) == 0 {
				ok = truthy(x)
			} else {
				ok, err = applyTest(e.d, str(rest[0]), x, rest[1:])
				if err != nil {
					return nil, err
				}
			}
			if ok == want {
				out = append(out, it)
			}
		}
		return e.d.seq(out), nil
	case "int":
		def := kwOr(args, kw, 0, "default", int64(0))
		switch x := v.(type) {
		case int64:
			return x, nil
		case float64:
			return int64(x), nil
		case bool:
			i, _ := asInt(x)
			return i, nil
		case string:
			s := strings.TrimSpace(x)
			if i, err := strconv.ParseInt(s, 10, 64); err == nil {
				return i, nil
			}
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				return int64(f), nil
			}
		}
		return def, nil
	case "float":
		def := kwOr(args, kw, 0, "default", 0.0)
		switch x := v.(type) {
		case int64, float64, bool:
			f, _ := toFloat(x)
			return f, nil
		case string:
			if f, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil {
				return f, nil
			}
		}
		return def, nil
	case "abs":
		switch x := v.(type) {
		case int64:
			if x < 0 {
				return -x, nil
			}
			return x, nil
		case float64:
			return math.Abs(x), nil
		}
		return nil, fmt.Errorf("template: bad operand type for abs(): '%s'", typeName(v))
	case "round":
		prec, _ := asInt(kwOr(args, kw, 0, "precision", int64(0)))
		method := str(kwOr(args, kw, 1, "method", "common"))
		f, ok := toFloat(v)
		if !ok {
			return nil, fmt.Errorf("template: round expects a number")
		}
		p := math.Pow(10, float64(prec))
		switch method {
		case "ceil":
			return math.Ceil(f*p) / p, nil
		case "floor":
			return math.Floor(f*p) / p, nil
		}
		return math.Round(f*p) / p, nil
	case "sum":
		items, err := iterate(v)
		if err != nil {
			return nil, err
		}
		var acc any = kwOr(args, kw, 1, "start", int64(0))
		attr := kwOr(args, kw, 0, "attribute", nil)
		for _, it := range items {
			if attr != nil {
				it, _ = getPath(it, str(attr))
			}
			if acc, err = binop(e.d, "+", acc, it); err != nil {
				return nil, err
			}
		}
		return acc, nil
	case "min", "max":
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
			if (name == "min" && c < 0) || (name == "max" && c > 0) {
				best = it
			}
		}
		return best, nil
	case "replace":
		s := e.d.str(v)
		old, nw := str(kwOr(args, kw, 0, "old", "")), str(kwOr(args, kw, 1, "new", ""))
		n := int64(-1)
		if c := kwOr(args, kw, 2, "count", nil); c != nil {
			n, _ = asInt(c)
		}
		return pyReplace(s, old, nw, int(n)), nil
	case "indent":
		width := kwOr(args, kw, 0, "width", int64(4))
		first := truthy(kwOr(args, kw, 1, "first", false))
		blank := truthy(kwOr(args, kw, 2, "blank", false))
		ind := ""
		if w, ok := width.(int64); ok {
			ind = strings.Repeat(" ", int(w))
		} else {
			ind = str(width)
		}
		s := e.d.str(v)
		lines := strings.Split(s, "\n")
		for i := range lines {
			if i == 0 && !first {
				continue
			}
			if lines[i] == "" && !blank && i > 0 {
				continue
			}
			if lines[i] == "" && !blank && i == 0 {
				continue
			}
			lines[i] = ind + lines[i]
		}
		return strings.Join(lines, "\n"), nil
	case "wordcount":
		return int64(len(strings.Fields(e.d.str(v)))), nil
	case "batch":
		items, err := iterate(v)
		if err != nil {
			return nil, err
		}
		n, _ := asInt(kwOr(args, kw, 0, "linecount", int64(1)))
		out := []any{}
		for i := 0; i < len(items); i += int(n) {
			end := i + int(n)
			if end > len(items) {
				end = len(items)
			}
			out = append(out, append([]any{}, items[i:end]...))
		}
		return out, nil
	}
	return nil, fmt.Errorf("template: no filter named '%s'", name)
}

func foldCase(v any) any {
	if s, ok := v.(string); ok {
		return strings.ToLower(s)
	}
	return v
}

func dictItems(m *OrderedMap) []any {
	out := make([]any, len(m.keys))
	for i, k := range m.keys {
		out[i] = []any{k, m.m[k]}
	}
	return out
}

// getPath resolves "a.b.0" like Jinja2's make_attrgetter.
func getPath(v any, path string) (any, error) {
	for _, part := range strings.Split(path, ".") {
		var err error
		if n, perr := strconv.ParseInt(part, 10, 64); perr == nil {
			v, err = getItem(v, n)
		} else {
			v, err = getItem(v, part)
		}
		if err != nil {
			return undefined{}, err
		}
	}
	return v, nil
}

// toJSON is transformers' tojson filter (json.dumps with ensure_ascii=False
// and insertion order). @huggingface/jinja writes undefined as null.
func toJSON(d Dialect, v any, args []any, kw *OrderedMap) (any, error) {
	o := jsonOpts{itemSep: ", ", keySep: ": "}
	if d == DialectHFJS {
		o.undef = "null"
	}
	if ind := kwOr(args, kw, 0, "indent", nil); ind != nil {
		switch x := ind.(type) {
		case int64:
			o.indent, o.hasIndent = strings.Repeat(" ", int(x)), true
		case string:
			o.indent, o.hasIndent = x, true
		}
		if o.hasIndent {
			o.itemSep = ","
		}
	}
	if sep, ok := kw.Get("separators"); ok && sep != nil {
		l, ok := sep.([]any)
		if !ok || len(l) != 2 {
			return nil, fmt.Errorf("template: tojson separators must be a pair")
		}
		o.itemSep, o.keySep = str(l[0]), str(l[1])
	}
	o.sortKeys = truthy(kwOr(args, kw, -1, "sort_keys", false))
	o.ensureASCII = truthy(kwOr(args, kw, -1, "ensure_ascii", false))
	var sb strings.Builder
	if err := writeJSON(&sb, v, o, 0); err != nil {
		return nil, fmt.Errorf("template: tojson: %w", err)
	}
	return sb.String(), nil
}
