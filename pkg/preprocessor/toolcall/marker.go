package toolcall

import "strings"

// A rule recognises one kind of call region by its opening marker.
type rule struct {
	open string
	// region is called with buf starting with open. It returns the length
	// of the region and its calls; n == 0 asks for more text, and ok ==
	// false makes buf[:n] content.
	region func(buf string, atEnd bool, cx *scanCtx) (n int, calls []Call, ok bool)
}

// leadVerdict is what a lead function decides about the start of an output.
type leadVerdict int

const (
	leadMore  leadVerdict = iota // too little text to decide
	leadNone                     // the output does not start with a call
	leadFound                    // buf[:n] is a region (content when !ok)
)

// leadFunc recognises a call that has no marker and is only taken at the
// very start of an output (llama3_json's plain JSON, a pythonic list).
type leadFunc func(buf string, atEnd bool, cx *scanCtx) (n int, calls []Call, ok bool, v leadVerdict)

// markedScanner finds call regions that start with fixed markers, and
// optionally one unmarked call at the start of the output.
type markedScanner struct {
	rules   []rule
	lead    leadFunc
	cx      *scanCtx
	started bool // the start of the output has been decided
}

func newMarked(tools toolSet, lead leadFunc, rules ...rule) *markedScanner {
	return &markedScanner{rules: rules, lead: lead, cx: newScanCtx(tools), started: lead == nil}
}

func (s *markedScanner) next(buf string, atEnd bool) (int, string, []Call) {
	n, content, calls := s.decide(buf, atEnd)
	if n > 0 {
		s.cx.reset()
	}
	return n, content, calls
}

func (s *markedScanner) decide(buf string, atEnd bool) (int, string, []Call) {
	if !s.started {
		n, calls, ok, v := s.lead(buf, atEnd, s.cx)
		switch v {
		case leadMore:
			return 0, "", nil
		case leadFound:
			s.started = true
			if !ok {
				return n, buf[:n], nil
			}
			return n, "", calls
		}
		s.started = true
	}
	at, r := -1, rule{}
	for _, cand := range s.rules {
		if i := strings.Index(buf, cand.open); i >= 0 && (at < 0 || i < at) {
			at, r = i, cand
		}
	}
	if at < 0 {
		if !atEnd {
			if p := partialMarker(buf, s.opens()); p >= 0 {
				return p, buf[:p], nil
			}
		}
		return len(buf), buf, nil
	}
	if at > 0 {
		return at, buf[:at], nil
	}
	n, calls, ok := r.region(buf, atEnd, s.cx)
	switch {
	case n == 0:
		return 0, "", nil
	case !ok:
		return n, buf[:n], nil
	}
	return n, "", calls
}

func (s *markedScanner) opens() []string {
	out := make([]string, len(s.rules))
	for i, r := range s.rules {
		out[i] = r.open
	}
	return out
}

// partialMarker returns the start of the longest suffix of buf that is a
// proper, non-empty prefix of one of markers, or -1.
func partialMarker(buf string, markers []string) int {
	for i := max(0, len(buf)-longest(markers)+1); i < len(buf); i++ {
		for _, m := range markers {
			if len(buf)-i < len(m) && strings.HasPrefix(m, buf[i:]) {
				return i
			}
		}
	}
	return -1
}

// longest returns the length of the longest of markers.
func longest(markers []string) int {
	n := 0
	for _, m := range markers {
		n = max(n, len(m))
	}
	return n
}

// firstOf returns the earliest occurrence in s of any of tokens, and which.
func firstOf(s string, tokens []string) (int, string) {
	at, which := -1, ""
	for _, t := range tokens {
		if i := strings.Index(s, t); i >= 0 && (at < 0 || i < at) {
			at, which = i, t
		}
	}
	return at, which
}

// enclosed returns a region function for calls written between open and
// close; body turns the text between them into calls.
func enclosed(open, close string, body func(string) ([]Call, bool)) func(string, bool, *scanCtx) (int, []Call, bool) {
	return func(buf string, _ bool, cx *scanCtx) (int, []Call, bool) {
		end := cx.index(buf, len(open), close)
		if end < 0 {
			return 0, nil, false
		}
		calls, ok := body(buf[len(open):end])
		return end + len(close), calls, ok
	}
}

// jsonEnclosed returns a region function for a JSON value written between
// open and close. The value is scanned first, so a close marker inside a
// JSON string does not end the region early; a body that is not a single
// JSON value ends at the first close marker and is content.
func jsonEnclosed(open, close string, decode func(value string) ([]Call, bool)) func(string, bool, *scanCtx) (int, []Call, bool) {
	fallback := enclosed(open, close, func(string) ([]Call, bool) { return nil, false })
	return func(buf string, atEnd bool, cx *scanCtx) (int, []Call, bool) {
		i := skipSpace(buf, len(open))
		if i == len(buf) {
			return 0, nil, false
		}
		if c := buf[i]; c != '{' && c != '[' {
			return fallback(buf, atEnd, cx)
		}
		n := cx.valueEnd(buf, i, `"`)
		if n == 0 {
			return 0, nil, false
		}
		j := skipSpace(buf, i+n)
		switch rest := buf[j:]; {
		case strings.HasPrefix(rest, close):
			calls, ok := decode(buf[i : i+n])
			return j + len(close), calls, ok
		case len(rest) < len(close) && strings.HasPrefix(close, rest):
			return 0, nil, false
		}
		return fallback(buf, atEnd, cx)
	}
}

// skipSpace returns the index of the first non-space byte of s at or after i.
func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
