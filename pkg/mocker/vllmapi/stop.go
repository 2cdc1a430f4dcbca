package vllmapi

import (
	"strings"
	"unicode/utf8"
)

// stopMatcher applies a choice's stop strings to its streamed text, as
// vLLM's detokenizer does: text that could still begin a stop string is
// held back until it is known not to, a match ends the choice with the
// text before the stop string (with it, under include_stop_str_in_output),
// and the earliest-ending match wins.
type stopMatcher struct {
	stops   []string
	include bool
	held    string
}

// newStopMatcher returns a matcher for stops, nil when there are none.
func newStopMatcher(stops []string, include bool) *stopMatcher {
	var s []string
	for _, x := range stops {
		if x != "" {
			s = append(s, x)
		}
	}
	if len(s) == 0 {
		return nil
	}
	return &stopMatcher{stops: s, include: include}
}

// push adds text and returns what may be shown, and the stop string when
// one matched (the matcher then holds nothing).
func (m *stopMatcher) push(text string) (emit, stop string, matched bool) {
	buf := m.held + text
	start, end := -1, -1
	for _, s := range m.stops {
		i := strings.Index(buf, s)
		if i < 0 {
			continue
		}
		if e := i + len(s); end < 0 || e < end || e == end && i < start {
			start, end, stop = i, e, s
		}
	}
	if end >= 0 {
		m.held = ""
		if m.include {
			return buf[:end], stop, true
		}
		return buf[:start], stop, true
	}
	keep := 0
	for k := min(len(buf), m.maxLen()-1); k > 0; k-- {
		i := len(buf) - k
		if !utf8.RuneStart(buf[i]) {
			continue
		}
		if m.prefix(buf[i:]) {
			keep = k
			break
		}
	}
	m.held = buf[len(buf)-keep:]
	return buf[:len(buf)-keep], "", false
}

// flush returns the held-back text (at the end of the choice).
func (m *stopMatcher) flush() string {
	s := m.held
	m.held = ""
	return s
}

func (m *stopMatcher) maxLen() int {
	n := 0
	for _, s := range m.stops {
		n = max(n, len(s))
	}
	return n
}

// prefix reports whether tail is a proper prefix of a stop string.
func (m *stopMatcher) prefix(tail string) bool {
	for _, s := range m.stops {
		if len(s) > len(tail) && strings.HasPrefix(s, tail) {
			return true
		}
	}
	return false
}
