package template

import (
	"fmt"
	"strings"
)

// filterToJSON is transformers' tojson(indent=None, separators=None,
// sort_keys=False, ensure_ascii=False): json.dumps with insertion order.
// @huggingface/jinja writes undefined as null.
func filterToJSON(e *evaluator, v any, args []any, kw *OrderedMap) (any, error) {
	o, err := toJSONOpts(e.d, args, kw)
	if err != nil {
		return nil, err
	}
	var sb strings.Builder
	if err := writeJSON(&sb, v, o, 0); err != nil {
		return nil, fmt.Errorf("template: tojson: %w", err)
	}
	return sb.String(), nil
}

// toJSONOpts reads tojson's arguments. indent is a number of spaces or the
// indent string, and switches the item separator to ",".
func toJSONOpts(d Dialect, args []any, kw *OrderedMap) (jsonOpts, error) {
	o := jsonOpts{itemSep: ", ", keySep: ": "}
	if d == DialectHFJS {
		o.undef = "null"
	}
	switch x := kwOr(args, kw, 0, "indent", nil).(type) {
	case int64:
		o.indent, o.hasIndent, o.itemSep = strings.Repeat(" ", int(x)), true, ","
	case string:
		o.indent, o.hasIndent, o.itemSep = x, true, ","
	}
	if sep, ok := kw.Get("separators"); ok && sep != nil {
		l, ok := sep.([]any)
		if !ok || len(l) != 2 {
			return o, fmt.Errorf("template: tojson separators must be a pair")
		}
		o.itemSep, o.keySep = str(l[0]), str(l[1])
	}
	o.sortKeys = truthy(kwOr(args, kw, -1, "sort_keys", false))
	o.ensureASCII = truthy(kwOr(args, kw, -1, "ensure_ascii", false))
	return o, nil
}
