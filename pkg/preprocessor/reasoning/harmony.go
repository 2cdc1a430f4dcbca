package reasoning

import "strings"

// Harmony markers (special tokens of the gpt-oss tokenizer).
const (
	hStart   = "<|start|>"
	hChannel = "<|channel|>"
	hMessage = "<|message|>"
	hEnd     = "<|end|>"
	hReturn  = "<|return|>"
	hCall    = "<|call|>"
)

var (
	// headerOpeners start a message header.
	headerOpeners = []string{hStart, hChannel}
	// leadOpeners may start the output: a header marker, or the recipient
	// of a tool call when the prompt ended with <|start|>assistant.
	leadOpeners = []string{hStart, hChannel, "to=", " to="}
	// bodyClosers end a message and are consumed with it.
	bodyClosers = []string{hEnd, hReturn, hCall}
	// bodyStops end a message body: its closers, or a new header.
	bodyStops = []string{hEnd, hReturn, hCall, hStart, hChannel}
)

// What a harmony message body becomes.
const (
	toContent   = iota // final (or unknown) channel: text without markers
	toReasoning        // analysis channel
	toVerbatim         // commentary: a tool call, passed through with its markers
)

// Where a harmonySplitter is in the output.
const (
	hAtLead  = iota // nothing seen yet
	hHeader         // inside a header, buffering it up to <|message|>
	hBody           // inside a message body
	hBetween        // after a message's closer
)

// harmonySplitter is the gpt_oss state machine.
type harmonySplitter struct {
	enabled bool
	state   int
	kind    int    // of the current body
	buf     string // text not yet released

	thought bool // some reasoning was released: the next analysis message starts with "\n"
	sep     bool // a "\n" is due before the current message's first reasoning text

	// An analysis message while thinking is off is held until its closer:
	// raw is the message as written, body its text.
	holding bool
	raw     strings.Builder
	body    strings.Builder
}

func newHarmony(enabled bool) splitter { return &harmonySplitter{enabled: enabled} }

func (s *harmonySplitter) push(text string, o *output) {
	s.buf += text
	for s.step(o, false) {
	}
}

func (s *harmonySplitter) finish(o *output) {
	for s.step(o, true) {
	}
	if s.holding {
		o.content.WriteString(s.raw.String())
		s.holding = false
	}
}

func (s *harmonySplitter) step(o *output, final bool) bool {
	switch s.state {
	case hAtLead, hBetween:
		if s.buf == "" {
			return false
		}
		openers := headerOpeners
		if s.state == hAtLead {
			openers = leadOpeners
		}
		if prefixAny(s.buf, openers) != "" {
			s.state = hHeader
			return true
		}
		if !final && isPartial(s.buf, openers) {
			return false
		}
		// Text outside any header: at the start the prompt opened the
		// analysis channel; between messages it is shown as content.
		s.kind = toContent
		if s.state == hAtLead && s.enabled {
			s.beginReasoning()
		}
		s.state = hBody
		return true

	case hHeader:
		i, m := indexAny(s.buf, append([]string{hMessage}, bodyClosers...))
		if i < 0 {
			if final {
				if headerKind(s.buf) == toVerbatim {
					o.content.WriteString(s.buf)
				}
				s.buf = ""
			}
			return false
		}
		header := s.buf[:i+len(m)]
		s.buf = s.buf[i+len(m):]
		kind := headerKind(header)
		if m != hMessage { // a header closed without a body
			if kind == toVerbatim {
				o.content.WriteString(header)
			}
			s.state = hBetween
			return true
		}
		s.kind = kind
		s.state = hBody
		switch kind {
		case toVerbatim:
			o.content.WriteString(header)
		case toReasoning:
			s.beginReasoning()
			if !s.enabled {
				s.holding = true
				s.raw.WriteString(header)
			}
		}
		return true

	default: // hBody
		i, m := indexAny(s.buf, bodyStops)
		if i < 0 {
			keep := 0
			if !final {
				keep = partialTail(s.buf, bodyStops)
			}
			s.emit(s.buf[:len(s.buf)-keep], o)
			s.buf = s.buf[len(s.buf)-keep:]
			return false
		}
		s.emit(s.buf[:i], o)
		closes := prefixAny(s.buf[i:], bodyClosers) != ""
		if closes {
			s.buf = s.buf[i+len(m):]
			if s.kind == toVerbatim {
				o.content.WriteString(m)
			}
			if s.holding { // the held analysis message is complete
				o.reasoning.WriteString(s.body.String())
				s.thought = s.thought || s.body.Len() > 0
			}
			s.state = hBetween
		} else {
			s.buf = s.buf[i:]
			if s.holding { // interrupted by a new header: not a complete block
				o.content.WriteString(s.raw.String())
			}
			s.state = hHeader
		}
		s.holding = false
		s.raw.Reset()
		s.body.Reset()
		return true
	}
}

// beginReasoning starts an analysis body.
func (s *harmonySplitter) beginReasoning() {
	s.kind = toReasoning
	s.sep = s.thought
}

// emit releases body text according to the current message's kind.
func (s *harmonySplitter) emit(text string, o *output) {
	if text == "" {
		return
	}
	switch s.kind {
	case toReasoning:
		if s.holding {
			s.raw.WriteString(text)
		}
		if s.sep {
			s.sep = false
			text = "\n" + text
		}
		if s.holding {
			s.body.WriteString(text)
			return
		}
		o.reasoning.WriteString(text)
		s.thought = true
	default:
		o.content.WriteString(text)
	}
}

// headerKind reads a header (from its first marker or recipient up to
// <|message|>): the channel named after <|channel|> decides; a recipient
// (to=…) without a channel is a tool call too.
func headerKind(header string) int {
	channel := ""
	if i := strings.Index(header, hChannel); i >= 0 {
		rest := header[i+len(hChannel):]
		end := strings.IndexAny(rest, " <")
		if end < 0 {
			end = len(rest)
		}
		channel = rest[:end]
	}
	switch {
	case channel == "analysis":
		return toReasoning
	case channel == "commentary", channel == "" && strings.Contains(header, "to="):
		return toVerbatim
	default:
		return toContent
	}
}
