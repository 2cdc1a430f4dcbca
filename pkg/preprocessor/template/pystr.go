package template

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Python str operations shared by filters and methods.

// pyTitle is str.title: the first letter of each run of letters upper
// case, the rest lower case.
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

// pyCapitalize is str.capitalize: the first rune upper case, the rest
// lower case.
func pyCapitalize(s string) string {
	rs := []rune(strings.ToLower(s))
	if len(rs) > 0 {
		rs[0] = unicode.ToUpper(rs[0])
	}
	return string(rs)
}

// pySwapcase is str.swapcase.
func pySwapcase(s string) string {
	rs := []rune(s)
	for i, c := range rs {
		if unicode.IsUpper(c) {
			rs[i] = unicode.ToLower(c)
		} else {
			rs[i] = unicode.ToUpper(c)
		}
	}
	return string(rs)
}

// pyReplace is str.replace(old, new, n) with n < 0 for all; an empty old
// inserts new around every rune, as Python does.
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

// pySplit is str.split(sep, maxsplit) and, with right, str.rsplit: a nil
// sep splits on runs of whitespace, and a negative maxsplit means no limit.
func pySplit(s string, sep any, maxsplit int, right bool) []any {
	if sep != nil {
		return anys(splitSep(s, str(sep), maxsplit, right))
	}
	fields := strings.FieldsFunc(s, isPySpace)
	if maxsplit < 0 || len(fields) <= maxsplit {
		return anys(fields)
	}
	if right {
		return anys(rsplitSpace(s, maxsplit))
	}
	return anys(splitSpace(s, maxsplit))
}

// splitSpace splits s at most maxsplit times on runs of whitespace, from
// the left; the rest keeps its inner whitespace.
func splitSpace(s string, maxsplit int) []string {
	var out []string
	rest := strings.TrimLeftFunc(s, isPySpace)
	for i := 0; i < maxsplit && rest != ""; i++ {
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

// rsplitSpace splits s maxsplit times on runs of whitespace, from the
// right. The caller ensures s has more than maxsplit fields.
func rsplitSpace(s string, maxsplit int) []string {
	rest := strings.TrimRightFunc(s, isPySpace)
	var tail []string
	for i := 0; i < maxsplit; i++ {
		j := strings.LastIndexFunc(rest, isPySpace)
		_, size := utf8.DecodeRuneInString(rest[j:]) // whitespace may be wider than a byte (U+3000)
		tail = append([]string{rest[j+size:]}, tail...)
		rest = strings.TrimRightFunc(rest[:j], isPySpace)
	}
	return append([]string{rest}, tail...) // Python keeps the head's leading whitespace
}

// splitSep splits s on sep, at most maxsplit times (no limit when
// negative), from the right when right.
func splitSep(s, sep string, maxsplit int, right bool) []string {
	if maxsplit < 0 {
		return strings.Split(s, sep)
	}
	if !right {
		return strings.SplitN(s, sep, maxsplit+1)
	}
	var parts []string
	rest := s
	for i := 0; i < maxsplit; i++ {
		j := strings.LastIndex(rest, sep)
		if j < 0 {
			break
		}
		parts = append([]string{rest[j+len(sep):]}, parts...)
		rest = rest[:j]
	}
	return append([]string{rest}, parts...)
}

// anys converts strings to template values; the result is never nil.
func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
