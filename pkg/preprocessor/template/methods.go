package template

import (
	"fmt"
	"strings"
	"unicode"
)

var stringMethods = map[string]bool{
	"strip": true, "lstrip": true, "rstrip": true, "split": true, "rsplit": true,
	"upper": true, "lower": true, "title": true, "capitalize": true,
	"startswith": true, "endswith": true, "replace": true, "find": true,
	"rfind": true, "count": true, "join": true, "splitlines": true,
	"isdigit": true, "isalpha": true, "isalnum": true, "isspace": true,
	"islower": true, "isupper": true, "index": true, "format": true,
	"removeprefix": true, "removesuffix": true, "swapcase": true,
}

func pyTitle(s string) string {
	var sb strings.Builder
	prevCased := false
	for _, r := range s {
		if unicode.IsLetter(r) {
			if prevCased {
				sb.WriteRune(unicode.ToLower(r))
			} else {
				sb.WriteRune(unicode.ToUpper(r))
			}
			prevCased = true
		} else {
			sb.WriteRune(r)
			prevCased = false
		}
	}
	return sb.String()
}

func pyReplace(s, old, nw string, n int) string {
	if old == "" {
		rs := []rune(s)
		var sb strings.Builder
		count := 0
		for i := 0; i <= len(rs); i++ {
			if n < 0 || count < n {
				sb.WriteString(nw)
				count++
			}
			if i < len(rs) {
				sb.WriteRune(rs[i])
			}
		}
		return sb.String()
	}
	return strings.Replace(s, old, nw, n)
}

func isPySpace(r rune) bool { return unicode.IsSpace(r) }

func pySplit(s string, sep any, max int, right bool) []any {
	out := []any{}
	if sep == nil {
		fields := strings.FieldsFunc(s, isPySpace)
		if max < 0 || len(fields) <= max {
			for _, f := range fields {
				out = append(out, f)
			}
			return out
		}
		if right {
			// rsplit with limit on whitespace
			rest := strings.TrimRightFunc(s, isPySpace)
			var tail []string
			for i := 0; i < max; i++ {
				j := strings.LastIndexFunc(rest, isPySpace)
				tail = append([]string{rest[j+1:]}, tail...)
				rest = strings.TrimRightFunc(rest[:j+1], isPySpace)
			}
			out = append(out, strings.TrimLeftFunc(rest, isPySpace))
			for _, t := range tail {
				out = append(out, t)
			}
			return out
		}
		rest := strings.TrimLeftFunc(s, isPySpace)
		for i := 0; i < max && rest != ""; i++ {
			j := strings.IndexFunc(rest, isPySpace)
			if j < 0 {
				break
			}
			out = append(out, rest[:j])
			rest = strings.TrimLeftFunc(rest[j:], isPySpace)
		}
		if rest != "" {
			out = append(out, rest)
		}
		return out
	}
	sp := str(sep)
	var parts []string
	if right && max >= 0 {
		parts = []string{}
		rest := s
		for i := 0; i < max; i++ {
			j := strings.LastIndex(rest, sp)
			if j < 0 {
				break
			}
			parts = append([]string{rest[j+len(sp):]}, parts...)
			rest = rest[:j]
		}
		parts = append([]string{rest}, parts...)
	} else {
		parts = strings.SplitN(s, sp, max+1)
		if max < 0 {
			parts = strings.Split(s, sp)
		}
	}
	for _, p := range parts {
		out = append(out, p)
	}
	return out
}

func callMethod(recv any, name string, args []any, kw *OrderedMap) (any, error) {
	arg := func(i int, kwName string, def any) any { return kwOr(args, kw, i, kwName, def) }
	switch r := recv.(type) {
	case string:
		switch name {
		case "strip", "lstrip", "rstrip":
			chars := arg(0, "chars", nil)
			cut := " \t\n\r\v\f"
			if chars != nil {
				cut = str(chars)
			}
			switch name {
			case "strip":
				if chars == nil {
					return strings.TrimFunc(r, isPySpace), nil
				}
				return strings.Trim(r, cut), nil
			case "lstrip":
				if chars == nil {
					return strings.TrimLeftFunc(r, isPySpace), nil
				}
				return strings.TrimLeft(r, cut), nil
			}
			if chars == nil {
				return strings.TrimRightFunc(r, isPySpace), nil
			}
			return strings.TrimRight(r, cut), nil
		case "split", "rsplit":
			max, _ := asInt(arg(1, "maxsplit", int64(-1)))
			return pySplit(r, arg(0, "sep", nil), int(max), name == "rsplit"), nil
		case "splitlines":
			lines := strings.Split(strings.TrimSuffix(r, "\n"), "\n")
			out := []any{}
			if r == "" {
				return out, nil
			}
			for _, l := range lines {
				out = append(out, l)
			}
			return out, nil
		case "upper":
			return strings.ToUpper(r), nil
		case "lower":
			return strings.ToLower(r), nil
		case "title":
			return pyTitle(r), nil
		case "capitalize":
			rs := []rune(strings.ToLower(r))
			if len(rs) > 0 {
				rs[0] = unicode.ToUpper(rs[0])
			}
			return string(rs), nil
		case "swapcase":
			rs := []rune(r)
			for i, c := range rs {
				if unicode.IsUpper(c) {
					rs[i] = unicode.ToLower(c)
				} else {
					rs[i] = unicode.ToUpper(c)
				}
			}
			return string(rs), nil
		case "startswith", "endswith":
			p := arg(0, "prefix", "")
			var cands []any
			if l, ok := p.([]any); ok {
				cands = l
			} else {
				cands = []any{p}
			}
			for _, c := range cands {
				if name == "startswith" && strings.HasPrefix(r, str(c)) || name == "endswith" && strings.HasSuffix(r, str(c)) {
					return true, nil
				}
			}
			return false, nil
		case "removeprefix":
			return strings.TrimPrefix(r, str(arg(0, "prefix", ""))), nil
		case "removesuffix":
			return strings.TrimSuffix(r, str(arg(0, "suffix", ""))), nil
		case "replace":
			n := int64(-1)
			if c := arg(2, "count", nil); c != nil {
				n, _ = asInt(c)
			}
			return pyReplace(r, str(arg(0, "old", "")), str(arg(1, "new", "")), int(n)), nil
		case "find", "index", "rfind":
			sub := str(arg(0, "sub", ""))
			var i int
			if name == "rfind" {
				i = strings.LastIndex(r, sub)
			} else {
				i = strings.Index(r, sub)
			}
			if i >= 0 {
				i = len([]rune(r[:i]))
			} else if name == "index" {
				return nil, fmt.Errorf("template: substring not found")
			}
			return int64(i), nil
		case "count":
			return int64(strings.Count(r, str(arg(0, "sub", "")))), nil
		case "join":
			items, err := iterate(arg(0, "iterable", []any{}))
			if err != nil {
				return nil, err
			}
			parts := make([]string, len(items))
			for i, it := range items {
				parts[i] = str(it)
			}
			return strings.Join(parts, r), nil
		case "isdigit", "isalpha", "isalnum", "isspace":
			if r == "" {
				return false, nil
			}
			for _, c := range r {
				ok := false
				switch name {
				case "isdigit":
					ok = unicode.IsDigit(c)
				case "isalpha":
					ok = unicode.IsLetter(c)
				case "isalnum":
					ok = unicode.IsLetter(c) || unicode.IsDigit(c)
				case "isspace":
					ok = unicode.IsSpace(c)
				}
				if !ok {
					return false, nil
				}
			}
			return true, nil
		case "islower":
			return r == strings.ToLower(r) && r != strings.ToUpper(r), nil
		case "isupper":
			return r == strings.ToUpper(r) && r != strings.ToLower(r), nil
		case "format":
			out := r
			for _, a := range args {
				out = strings.Replace(out, "{}", str(a), 1)
			}
			for _, k := range kw.keys {
				out = strings.ReplaceAll(out, "{"+k+"}", str(kw.m[k]))
			}
			return out, nil
		}
	case *OrderedMap:
		switch name {
		case "get":
			k := str(arg(0, "key", ""))
			if v, ok := r.m[k]; ok {
				return v, nil
			}
			return arg(1, "default", nil), nil
		case "items":
			return dictItems(r), nil
		case "keys":
			out := make([]any, len(r.keys))
			for i, k := range r.keys {
				out[i] = k
			}
			return out, nil
		case "values":
			out := make([]any, len(r.keys))
			for i, k := range r.keys {
				out[i] = r.m[k]
			}
			return out, nil
		}
	case []any:
		switch name {
		case "index":
			for i, x := range r {
				if equal(x, arg(0, "x", nil)) {
					return int64(i), nil
				}
			}
			return nil, fmt.Errorf("template: value is not in list")
		case "count":
			n := int64(0)
			for _, x := range r {
				if equal(x, arg(0, "x", nil)) {
					n++
				}
			}
			return n, nil
		}
	}
	return nil, fmt.Errorf("template: '%s' object has no attribute '%s'", typeName(recv), name)
}
