package toolcall

import "strings"

// scanCtx is what region functions get besides the text: the request's
// tools and memos that let a scan of a held region resume where the
// previous delta left it, instead of starting over (a long call would
// otherwise cost time quadratic in its length). The memos are keyed by
// offsets in the undecided text, so the owner resets them whenever it
// consumes any of that text.
type scanCtx struct {
	tools toolSet

	value      valueState // the last unfinished valueEnd scan
	valueAt    int        // its start offset, -1 for none
	valueQuote string     // its quote bytes
	searched   int        // the last failed index search covered buf[:searched]
	searchFor  string     // what it looked for
	searchFrom int        // and from where
}

func newScanCtx(tools toolSet) *scanCtx {
	return &scanCtx{tools: tools, valueAt: -1, searchFrom: -1}
}

// reset forgets the memos; call it when the text they describe moves.
func (c *scanCtx) reset() {
	c.valueAt, c.searchFrom = -1, -1
}

// valueEnd returns the length of the bracketed value ({...}, [...] or
// (...)) at buf[at:], or 0 when buf ends before the value closes, resuming
// an unfinished scan of the same value. Text inside strings delimited by
// any byte of quotes (with backslash escapes) is skipped. Brackets are only
// counted, not matched: a decoder checks the value afterwards. c may be nil.
func (c *scanCtx) valueEnd(buf string, at int, quotes string) int {
	st := valueState{}
	if c != nil && c.valueAt == at && c.valueQuote == quotes {
		st = c.value
	}
	n := st.scan(buf[at:], quotes)
	if n == 0 && c != nil {
		c.value, c.valueAt, c.valueQuote = st, at, quotes
	}
	return n
}

// index is the offset of the first sub in buf at or after from, or -1,
// skipping what an earlier failed search of the same text covered.
func (c *scanCtx) index(buf string, from int, sub string) int {
	start := from
	if c != nil && c.searchFrom == from && c.searchFor == sub {
		start = max(from, c.searched-len(sub)+1)
	}
	if i := strings.Index(buf[start:], sub); i >= 0 {
		return start + i
	}
	if c != nil {
		c.searched, c.searchFor, c.searchFrom = len(buf), sub, from
	}
	return -1
}

// valueState is where a scan for the end of a value stands.
type valueState struct {
	pos, depth int
	quote      byte // the open string's quote, or 0
	escaped    bool // the previous byte in the string was a backslash
}

// scan goes on from st.pos and returns the value's length, or 0.
func (st *valueState) scan(s, quotes string) int {
	for ; st.pos < len(s); st.pos++ {
		c := s[st.pos]
		if st.quote != 0 {
			switch {
			case st.escaped:
				st.escaped = false
			case c == '\\':
				st.escaped = true
			case c == st.quote:
				st.quote = 0
			}
			continue
		}
		switch {
		case c == '{' || c == '[' || c == '(':
			st.depth++
		case c == '}' || c == ']' || c == ')':
			st.depth--
			if st.depth <= 0 {
				return st.pos + 1
			}
		case strings.IndexByte(quotes, c) >= 0:
			st.quote = c
		}
	}
	return 0
}

// scanStatus is the outcome of scanning a region whose end is not marked.
type scanStatus int

const (
	scanMore scanStatus = iota // the text ends before the region does
	scanBad                    // the text is not of the expected form
	scanDone                   // the region is complete
)
