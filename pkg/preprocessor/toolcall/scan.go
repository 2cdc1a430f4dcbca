package toolcall

// valueEnd returns the length of the bracketed value ({...}, [...] or
// (...)) at the start of s, or 0 when s ends before the value closes. Text
// inside strings delimited by any byte of quotes (with backslash escapes)
// is skipped. Brackets are only counted, not matched: a decoder checks the
// value afterwards.
func valueEnd(s, quotes string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '{', '[', '(':
			depth++
		case '}', ']', ')':
			depth--
			if depth <= 0 {
				return i + 1
			}
		default:
			if !isQuote(c, quotes) {
				continue
			}
			i++
			for i < len(s) && s[i] != c {
				if s[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(s) {
				return 0
			}
		}
	}
	return 0
}

func isQuote(c byte, quotes string) bool {
	for i := 0; i < len(quotes); i++ {
		if quotes[i] == c {
			return true
		}
	}
	return false
}

// scanStatus is the outcome of scanning a region whose end is not marked.
type scanStatus int

const (
	scanMore scanStatus = iota // the text ends before the region does
	scanBad                    // the text is not of the expected form
	scanDone                   // the region is complete
)

// jsonObjects scans one or more JSON objects separated by ';' (llama3_json)
// starting at s[i] (after spaces). It returns the end of the last object
// and the objects' texts. A ';' not followed by an object ends the region
// before it.
func jsonObjects(s string, i int, atEnd bool) (end int, objs []string, st scanStatus) {
	i = skipSpace(s, i)
	if i == len(s) {
		return 0, nil, more(atEnd)
	}
	if s[i] != '{' {
		return 0, nil, scanBad
	}
	for {
		n := valueEnd(s[i:], `"`)
		if n == 0 {
			return 0, nil, more(atEnd)
		}
		objs = append(objs, s[i:i+n])
		end = i + n
		j := skipSpace(s, end)
		if j == len(s) && !atEnd {
			return 0, nil, scanMore
		}
		if j == len(s) || s[j] != ';' {
			return end, objs, scanDone
		}
		j = skipSpace(s, j+1)
		if j == len(s) && !atEnd {
			return 0, nil, scanMore
		}
		if j == len(s) || s[j] != '{' {
			return end, objs, scanDone
		}
		i = j
	}
}

// more is scanMore, or scanBad once no more text will come.
func more(atEnd bool) scanStatus {
	if atEnd {
		return scanBad
	}
	return scanMore
}
