package reasoning

import "strings"

// markerSpec describes a marker-pair format.
type markerSpec struct {
	starts []string // open a reasoning block; dropped
	ends   []string // close it; dropped
	exits  []string // also close it, but belong to the content (a tool section)
	force  bool     // the prompt already opened the block: the output starts inside it
	again  bool     // after a block has closed, a later block may open
}

func (m *markerSpec) splitter(enabled bool) splitter {
	closers := append(append([]string(nil), m.ends...), m.exits...)
	return &markerSplitter{spec: m, enabled: enabled, closers: closers}
}

// Where a markerSplitter is in the output.
const (
	atLead    = iota // nothing but whitespace seen yet
	inBlock          // inside a reasoning block
	afterward        // after a block: content, and a new block may open
	plainText        // content to the end, no markers
)

// markerSplitter is the state machine for a markerSpec.
type markerSplitter struct {
	spec    *markerSpec
	enabled bool
	closers []string // ends and exits
	state   int
	buf     string // text not yet released

	// A block opened while thinking is off is held until it closes: raw
	// is the block as written (from the leading whitespace and the start
	// marker), body its reasoning so far.
	holding bool
	raw     strings.Builder
	body    strings.Builder
}

func (s *markerSplitter) push(text string, o *output) {
	s.buf += text
	for s.step(o, false) {
	}
}

func (s *markerSplitter) finish(o *output) {
	for s.step(o, true) {
	}
	if s.holding {
		o.content.WriteString(s.raw.String())
		s.holding = false
	}
}

// step makes one move on buf and reports whether another may follow. When
// final is set nothing is held back for a marker to come.
func (s *markerSplitter) step(o *output, final bool) bool {
	switch s.state {
	case atLead:
		rest := strings.TrimLeft(s.buf, " \t\r\n")
		if m := prefixAny(rest, s.spec.starts); m != "" {
			s.open(s.buf[:len(s.buf)-len(rest)+len(m)])
			s.buf = rest[len(m):]
			return true
		}
		if !final && (rest == "" || isPartial(rest, s.spec.starts)) {
			return false
		}
		if s.spec.force && s.enabled {
			s.state = inBlock
		} else {
			s.state = plainText
		}
		return true

	case inBlock:
		i, m := indexAny(s.buf, s.closers)
		if i >= 0 {
			s.think(s.buf[:i])
			s.close(o)
			if prefixAny(s.buf[i:], s.spec.exits) != "" {
				o.content.WriteString(m)
			}
			s.buf = s.buf[i+len(m):]
			if s.spec.again {
				s.state = afterward
			} else {
				s.state = plainText
			}
			return true
		}
		s.think(s.release(final, s.closers))
		if !s.holding {
			o.reasoning.WriteString(s.body.String())
			s.body.Reset()
		}
		return false

	case afterward:
		i, m := indexAny(s.buf, s.spec.starts)
		if i >= 0 {
			o.content.WriteString(s.buf[:i])
			s.open(m)
			s.buf = s.buf[i+len(m):]
			return true
		}
		o.content.WriteString(s.release(final, s.spec.starts))
		return false

	default: // plainText
		o.content.WriteString(s.buf)
		s.buf = ""
		return false
	}
}

// release takes from buf all but a tail that may still become one of the
// markers (nothing is kept when final).
func (s *markerSplitter) release(final bool, markers []string) string {
	keep := 0
	if !final {
		keep = partialTail(s.buf, markers)
	}
	out := s.buf[:len(s.buf)-keep]
	s.buf = s.buf[len(s.buf)-keep:]
	return out
}

// open enters a block whose opening text (whitespace and marker) was raw.
func (s *markerSplitter) open(raw string) {
	s.state = inBlock
	s.holding = !s.enabled
	s.raw.Reset()
	s.body.Reset()
	if s.holding {
		s.raw.WriteString(raw)
	}
}

// think adds reasoning text to the open block.
func (s *markerSplitter) think(text string) {
	s.body.WriteString(text)
	if s.holding {
		s.raw.WriteString(text)
	}
}

// close ends the open block, releasing its reasoning.
func (s *markerSplitter) close(o *output) {
	o.reasoning.WriteString(s.body.String())
	s.body.Reset()
	s.raw.Reset()
	s.holding = false
}
