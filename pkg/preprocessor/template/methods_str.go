package template

import (
	"fmt"
	"strings"
	"unicode"
)

// stringMethods are the str methods that templates can call.
var stringMethods = map[string]method[string]{
	"strip":        stripMethod(strings.TrimFunc, strings.Trim),
	"lstrip":       stripMethod(strings.TrimLeftFunc, strings.TrimLeft),
	"rstrip":       stripMethod(strings.TrimRightFunc, strings.TrimRight),
	"split":        splitMethod(false),
	"rsplit":       splitMethod(true),
	"splitlines":   strSplitlines,
	"upper":        strMapper(strings.ToUpper),
	"lower":        strMapper(strings.ToLower),
	"title":        strMapper(pyTitle),
	"capitalize":   strMapper(pyCapitalize),
	"swapcase":     strMapper(pySwapcase),
	"startswith":   affixMethod(strings.HasPrefix),
	"endswith":     affixMethod(strings.HasSuffix),
	"removeprefix": strRemoveprefix,
	"removesuffix": strRemovesuffix,
	"replace":      strReplace,
	"find":         findMethod(strings.Index, false),
	"rfind":        findMethod(strings.LastIndex, false),
	"index":        findMethod(strings.Index, true),
	"count":        strCount,
	"join":         strJoin,
	"isdigit":      allRunes(unicode.IsDigit),
	"isalpha":      allRunes(unicode.IsLetter),
	"isalnum":      allRunes(isAlnum),
	"isspace":      allRunes(unicode.IsSpace),
	"islower":      strIslower,
	"isupper":      strIsupper,
	"format":       strFormat,
}

// stripMethod builds strip(chars=None), lstrip and rstrip: trimSpace
// strips whitespace, trim the given chars.
func stripMethod(trimSpace func(string, func(rune) bool) string, trim func(string, string) string) method[string] {
	return func(s string, args []any, kw *OrderedMap) (any, error) {
		chars := kwOr(args, kw, 0, "chars", nil)
		if chars == nil {
			return trimSpace(s, isPySpace), nil
		}
		return trim(s, str(chars)), nil
	}
}

// splitMethod builds split(sep=None, maxsplit=-1) and, with right, rsplit.
func splitMethod(right bool) method[string] {
	return func(s string, args []any, kw *OrderedMap) (any, error) {
		maxsplit, _ := asInt(kwOr(args, kw, 1, "maxsplit", int64(-1)))
		return pySplit(s, kwOr(args, kw, 0, "sep", nil), int(maxsplit), right), nil
	}
}

// strSplitlines is splitlines() for "\n" line ends.
func strSplitlines(s string, _ []any, _ *OrderedMap) (any, error) {
	out := []any{}
	if s == "" {
		return out, nil
	}
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		out = append(out, l)
	}
	return out, nil
}

// strMapper builds a method without arguments that maps s to f(s).
func strMapper(f func(string) string) method[string] {
	return func(s string, _ []any, _ *OrderedMap) (any, error) {
		return f(s), nil
	}
}

// affixMethod builds startswith(prefix) and endswith(suffix); the argument
// may be a tuple of candidates.
func affixMethod(has func(s, affix string) bool) method[string] {
	return func(s string, args []any, kw *OrderedMap) (any, error) {
		p := kwOr(args, kw, 0, "prefix", "")
		cands, ok := p.([]any)
		if !ok {
			cands = []any{p}
		}
		for _, c := range cands {
			if has(s, str(c)) {
				return true, nil
			}
		}
		return false, nil
	}
}

func strRemoveprefix(s string, args []any, kw *OrderedMap) (any, error) {
	return strings.TrimPrefix(s, str(kwOr(args, kw, 0, "prefix", ""))), nil
}

func strRemovesuffix(s string, args []any, kw *OrderedMap) (any, error) {
	return strings.TrimSuffix(s, str(kwOr(args, kw, 0, "suffix", ""))), nil
}

// strReplace is replace(old, new, count=-1).
func strReplace(s string, args []any, kw *OrderedMap) (any, error) {
	n := int64(-1)
	if c := kwOr(args, kw, 2, "count", nil); c != nil {
		n, _ = asInt(c)
	}
	old, nw := str(kwOr(args, kw, 0, "old", "")), str(kwOr(args, kw, 1, "new", ""))
	return pyReplace(s, old, nw, int(n)), nil
}

// findMethod builds find(sub), rfind and index: the rune offset of sub as
// index locates it, or -1; with raise (index), a miss is an error.
func findMethod(index func(s, sub string) int, raise bool) method[string] {
	return func(s string, args []any, kw *OrderedMap) (any, error) {
		i := index(s, str(kwOr(args, kw, 0, "sub", "")))
		if i >= 0 {
			i = len([]rune(s[:i]))
		} else if raise {
			return nil, fmt.Errorf("template: substring not found")
		}
		return int64(i), nil
	}
}

func strCount(s string, args []any, kw *OrderedMap) (any, error) {
	return int64(strings.Count(s, str(kwOr(args, kw, 0, "sub", "")))), nil
}

// strJoin is join(iterable): the items' str() with s between them.
func strJoin(s string, args []any, kw *OrderedMap) (any, error) {
	items, err := iterate(kwOr(args, kw, 0, "iterable", []any{}))
	if err != nil {
		return nil, err
	}
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = str(it)
	}
	return strings.Join(parts, s), nil
}

// allRunes builds isdigit, isalpha, isalnum and isspace: s is not empty and
// every rune satisfies is.
func allRunes(is func(rune) bool) method[string] {
	return func(s string, _ []any, _ *OrderedMap) (any, error) {
		if s == "" {
			return false, nil
		}
		for _, c := range s {
			if !is(c) {
				return false, nil
			}
		}
		return true, nil
	}
}

func isAlnum(c rune) bool { return unicode.IsLetter(c) || unicode.IsDigit(c) }

func strIslower(s string, _ []any, _ *OrderedMap) (any, error) {
	return s == strings.ToLower(s) && s != strings.ToUpper(s), nil
}

func strIsupper(s string, _ []any, _ *OrderedMap) (any, error) {
	return s == strings.ToUpper(s) && s != strings.ToLower(s), nil
}

// strFormat is format() for "{}" (positional, in order) and "{name}"
// fields only.
func strFormat(s string, args []any, kw *OrderedMap) (any, error) {
	for _, a := range args {
		s = strings.Replace(s, "{}", str(a), 1)
	}
	for _, k := range kw.keys {
		s = strings.ReplaceAll(s, "{"+k+"}", str(kw.m[k]))
	}
	return s, nil
}
