package preprocessor

import (
	"strings"
	"unicode/utf8"
)

// stopJail finds stop strings in streamed text. It holds back (jails) the
// trailing text that could still be the start of a stop string, so that no
// part of a stop string reaches the client before it is known whether the
// string completes.
//
// Text pushed as protected (generated while min_tokens forbids stop checks)
// is emitted or held like any other text, but a match must end after it: a
// stop string lying wholly inside protected text does not stop the choice.
type stopJail struct {
	stops   []string // non-empty stop strings
	include bool     // include_stop_str_in_output
	maxLen  int      // length in bytes of the longest stop string

	buf       string // held-back text, never containing a complete stop string
	protected int    // bytes at the start of buf pushed as protected
}

// newStopJail returns a jail for stops; empty strings are dropped.
func newStopJail(stops []string, include bool) *stopJail {
	j := &stopJail{include: include}
	for _, s := range stops {
		if s == "" {
			continue
		}
		j.stops = append(j.stops, s)
		j.maxLen = max(j.maxLen, len(s))
	}
	return j
}

// push adds text and returns the text that is now safe to emit. When a stop
// string completes, matched is true, stop is the string, and emit ends
// before it (or after it when include is set); the jail is then empty and
// the rest of the text is dropped.
//
// When several stop strings occur, the one that ends first wins (the one a
// character-by-character stream would complete first), and of those ending
// at the same place the longest, so the result does not depend on how the
// text was cut into pieces.
func (j *stopJail) push(text string, protected bool) (emit, stop string, matched bool) {
	if len(j.stops) == 0 {
		return text, "", false
	}
	if j.buf == "" {
		j.buf = text
	} else {
		j.buf += text
	}
	if protected {
		j.protected = len(j.buf)
	}
	if start, end, s, ok := j.find(); ok {
		cut := start
		if j.include {
			cut = end
		}
		emit = j.buf[:cut]
		j.buf, j.protected = "", 0
		return emit, s, true
	}
	keep := j.holdBack()
	emit = j.buf[:len(j.buf)-keep]
	j.buf = j.buf[len(j.buf)-keep:]
	j.protected = max(0, j.protected-len(emit))
	return emit, "", false
}

// flush empties the jail and returns what it held. The held text never
// contains a complete stop string, so all of it goes to the client.
func (j *stopJail) flush() string {
	s := j.buf
	j.buf, j.protected = "", 0
	return s
}

// find returns the stop string occurrence in buf that ends first after the
// protected prefix (ties: the longest).
func (j *stopJail) find() (start, end int, stop string, ok bool) {
	for _, s := range j.stops {
		from := max(0, j.protected-len(s)+1)
		if from >= len(j.buf) {
			continue
		}
		i := strings.Index(j.buf[from:], s)
		if i < 0 {
			continue
		}
		st, en := from+i, from+i+len(s)
		if !ok || en < end || (en == end && st < start) {
			start, end, stop, ok = st, en, s, true
		}
	}
	return start, end, stop, ok
}

// holdBack returns the length of the longest suffix of buf that starts on a
// character boundary and is a proper prefix of some stop string.
func (j *stopJail) holdBack() int {
	for k := min(len(j.buf), j.maxLen-1); k > 0; k-- {
		i := len(j.buf) - k
		if !utf8.RuneStart(j.buf[i]) {
			continue
		}
		tail := j.buf[i:]
		for _, s := range j.stops {
			if len(s) > k && strings.HasPrefix(s, tail) {
				return k
			}
		}
	}
	return 0
}
