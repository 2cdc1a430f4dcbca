package template

import "strings"

// String filters. Each converts its input with the dialect's str first.

// htmlEscaper is what escape replaces, as markupsafe does.
var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "\"", "&#34;", "'", "&#39;")

// filterSafe is safe: the value unchanged (there is no autoescaping).
func filterSafe(_ *evaluator, v any, _ []any, _ *OrderedMap) (any, error) {
	return v, nil
}

// filterEscape is escape (e, forceescape): HTML-escapes str(v).
func filterEscape(e *evaluator, v any, _ []any, _ *OrderedMap) (any, error) {
	return htmlEscaper.Replace(e.d.str(v)), nil
}

func filterString(e *evaluator, v any, _ []any, _ *OrderedMap) (any, error) {
	return e.d.str(v), nil
}

func filterUpper(e *evaluator, v any, _ []any, _ *OrderedMap) (any, error) {
	return strings.ToUpper(e.d.str(v)), nil
}

func filterLower(e *evaluator, v any, _ []any, _ *OrderedMap) (any, error) {
	return strings.ToLower(e.d.str(v)), nil
}

func filterTitle(e *evaluator, v any, _ []any, _ *OrderedMap) (any, error) {
	return pyTitle(e.d.str(v)), nil
}

func filterCapitalize(e *evaluator, v any, _ []any, _ *OrderedMap) (any, error) {
	return pyCapitalize(e.d.str(v)), nil
}

// filterTrim is trim(chars=None): strips chars, or whitespace.
func filterTrim(e *evaluator, v any, args []any, kw *OrderedMap) (any, error) {
	if c, ok := kwOr(args, kw, 0, "chars", nil).(string); ok {
		return strings.Trim(e.d.str(v), c), nil
	}
	return strings.TrimSpace(e.d.str(v)), nil
}

// filterReplace is replace(old, new, count=None).
func filterReplace(e *evaluator, v any, args []any, kw *OrderedMap) (any, error) {
	s := e.d.str(v)
	old, nw := str(kwOr(args, kw, 0, "old", "")), str(kwOr(args, kw, 1, "new", ""))
	n := int64(-1)
	if c := kwOr(args, kw, 2, "count", nil); c != nil {
		n, _ = asInt(c)
	}
	return pyReplace(s, old, nw, int(n)), nil
}

// filterIndent is indent(width=4, first=False, blank=False): prefixes every
// line but the first (unless first) and blank lines (unless blank). width
// is a number of spaces or the prefix itself.
func filterIndent(e *evaluator, v any, args []any, kw *OrderedMap) (any, error) {
	width := kwOr(args, kw, 0, "width", int64(4))
	first := truthy(kwOr(args, kw, 1, "first", false))
	blank := truthy(kwOr(args, kw, 2, "blank", false))
	var ind string
	if w, ok := width.(int64); ok {
		ind = strings.Repeat(" ", int(w))
	} else {
		ind = str(width)
	}
	lines := strings.Split(e.d.str(v), "\n")
	for i, l := range lines {
		if (i == 0 && !first) || (l == "" && !blank) {
			continue
		}
		lines[i] = ind + l
	}
	return strings.Join(lines, "\n"), nil
}

func filterWordcount(e *evaluator, v any, _ []any, _ *OrderedMap) (any, error) {
	return int64(len(strings.Fields(e.d.str(v)))), nil
}
