package toolcall

import "strings"

// A rule recognises one kind of call region by its opening marker.
type rule struct {
	open string
	// region starts reading a region at its marker.
	region func(cx *scanCtx) region
}

// A region reads one call region, from its opening marker (or, for a
// lead, from the start of the output) on, over as many Pushes as it
// takes. buf always starts at the first undecided byte: the region keeps
// its place in it across calls, less what it decided.
type region interface {
	// read decides a prefix of buf, emitting what it yields, and returns
	// its length. done reports that the region is over, its last byte
	// decided; the text after it is scanned anew. !done asks for more
	// text (at the end of the output a region is always done).
	read(buf string, atEnd bool, e *emitter) (n int, done bool)
}

// markedScanner finds call regions that start with fixed markers, and
// optionally one unmarked call at the start of the output (a lead).
type markedScanner struct {
	rules   []rule
	lead    func(cx *scanCtx) region
	cx      *scanCtx
	started bool   // the start of the output has been decided
	active  region // the region being read, or nil
}

func newMarked(tools toolSet, lead func(*scanCtx) region, rules ...rule) *markedScanner {
	return &markedScanner{rules: rules, lead: lead, cx: newScanCtx(tools), started: lead == nil}
}

func (s *markedScanner) next(buf string, atEnd bool, e *emitter) int {
	n := s.decide(buf, atEnd, e)
	if n > 0 {
		s.cx.reset()
	}
	return n
}

func (s *markedScanner) decide(buf string, atEnd bool, e *emitter) int {
	if !s.started {
		s.started = true
		s.active = s.lead(s.cx)
	}
	if s.active != nil {
		n, done := s.active.read(buf, atEnd, e)
		if done {
			s.active = nil
		}
		if n > 0 || !done {
			return n
		}
	}
	at, r := -1, rule{}
	for _, cand := range s.rules {
		if i := strings.Index(buf, cand.open); i >= 0 && (at < 0 || i < at) {
			at, r = i, cand
		}
	}
	switch {
	case at < 0:
		if !atEnd {
			if p := partialMarker(buf, s.opens()); p >= 0 {
				e.content(buf[:p])
				return p
			}
		}
		e.content(buf)
		return len(buf)
	case at > 0:
		e.content(buf[:at])
		return at
	}
	s.active = r.region(s.cx)
	return s.decide(buf, atEnd, e)
}

func (s *markedScanner) opens() []string {
	out := make([]string, len(s.rules))
	for i, r := range s.rules {
		out[i] = r.open
	}
	return out
}

// wholeRegion adapts a region function that reads a region whole: it
// returns the region's length and its calls once the region is complete
// (n == 0 asks for more text), ok == false making buf[:n] content. Its
// calls are emitted whole, each in one delta.
type wholeRegion struct {
	fn func(buf string, atEnd bool, cx *scanCtx) (n int, calls []Call, ok bool)
	cx *scanCtx
}

func whole(fn func(string, bool, *scanCtx) (int, []Call, bool)) func(*scanCtx) region {
	return func(cx *scanCtx) region { return &wholeRegion{fn: fn, cx: cx} }
}

func (w *wholeRegion) read(buf string, atEnd bool, e *emitter) (int, bool) {
	n, calls, ok := w.fn(buf, atEnd, w.cx)
	switch {
	case n < 0: // a lead that is not there
		return 0, true
	case n == 0 && atEnd:
		e.content(buf)
		return len(buf), true
	case n == 0:
		return 0, false
	case !ok:
		e.content(buf[:n])
	default:
		for _, c := range calls {
			e.call(c)
		}
	}
	return n, true
}

// leadFunc recognises a call that has no marker and is only taken at the
// very start of an output, read whole (a pythonic list).
type leadFunc func(buf string, atEnd bool, cx *scanCtx) (n int, calls []Call, ok bool, v leadVerdict)

// leadVerdict is what a lead function decides about the start of an output.
type leadVerdict int

const (
	leadMore  leadVerdict = iota // too little text to decide
	leadNone                     // the output does not start with a call
	leadFound                    // buf[:n] is a region (content when !ok)
)

// wholeLead adapts a leadFunc.
func wholeLead(fn leadFunc) func(*scanCtx) region {
	return func(cx *scanCtx) region {
		return &wholeRegion{cx: cx, fn: func(buf string, atEnd bool, cx *scanCtx) (int, []Call, bool) {
			n, calls, ok, v := fn(buf, atEnd, cx)
			switch v {
			case leadMore:
				return 0, nil, false
			case leadNone:
				return -1, nil, false
			}
			return n, calls, ok
		}}
	}
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

// skipSpace returns the index of the first non-space byte of s at or after i.
func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
