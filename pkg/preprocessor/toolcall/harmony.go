package toolcall

import "strings"

// Harmony (gpt-oss). The output is a series of messages:
//
//	<|start|>assistant<|channel|>analysis<|message|>thinking...<|end|>
//	<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}<|call|>
//	<|start|>assistant<|channel|>final<|message|>It is sunny.<|return|>
//
// A header runs from <|start|> or <|channel|> to <|message|>; the
// <|start|>assistant part and " <|constrain|>json" are optional, and
// "to=functions.NAME" may also come before <|channel|>. A message whose
// recipient is functions.NAME is a call whatever its channel; its body is
// the JSON arguments, ended by <|call|> or by the end of the output
// (<|call|> is a stop token a backend may hide), streamed once committed
// (see callReader); a terminator inside the JSON ends the call there.
// A body that is not a JSON object makes the whole message content, as
// it was written; text after the arguments is content. Other messages:
//   - final, commentary without a recipient (a preamble) or no channel:
//     the body is content, without markers, released as it streams;
//   - analysis: dropped (a reasoning parser normally takes it earlier);
//   - any other recipient (a built-in tool such as browser.search): the
//     message comes back as content, markers and all.
//
// Stray control tokens outside a message (<|end|> and the like) are
// dropped, as a detokenizer skipping special tokens would.
const (
	hStart     = "<|start|>"
	hChannel   = "<|channel|>"
	hMessage   = "<|message|>"
	hEnd       = "<|end|>"
	hReturn    = "<|return|>"
	hCall      = "<|call|>"
	hConstrain = "<|constrain|>"
)

var (
	harmonyTokens    = []string{hStart, hChannel, hMessage, hEnd, hReturn, hCall, hConstrain}
	harmonyBodyEnds  = []string{hEnd, hReturn, hCall, hStart, hChannel}
	harmonyEndTokens = map[string]bool{hEnd: true, hReturn: true, hCall: true}
)

// bodyKind says what becomes of a message's body.
type bodyKind int

const (
	bodyText  bodyKind = iota // content, streamed
	bodyDrop                  // analysis, dropped
	bodyCall                  // a function call, streamed once committed
	bodyOther                 // another recipient (or a call that is not one), returned raw
)

type harmonyScanner struct {
	inBody   bool
	searched int // a held body's first searched bytes hold no terminator
	kind     bodyKind
	name     string // the function of a bodyCall message
	header   string // the raw header with <|message|>, for bodyCall and bodyOther
	// A bodyCall message's arguments: at and hold as in jsonRegion.
	call     *callReader
	at, hold int
	argsDone bool
}

func newHarmony(toolSet) scanner { return &harmonyScanner{} }

func (s *harmonyScanner) next(buf string, atEnd bool, e *emitter) int {
	if s.inBody {
		return s.body(buf, atEnd, e)
	}
	at, tok := firstOf(buf, harmonyTokens)
	switch {
	case at < 0:
		if !atEnd {
			if p := partialMarker(buf, harmonyTokens); p >= 0 {
				e.content(buf[:p])
				return p
			}
		}
		e.content(buf)
		return len(buf)
	case at > 0:
		e.content(buf[:at])
		return at
	case tok != hStart && tok != hChannel: // a stray control token
		return len(tok)
	}
	m := strings.Index(buf, hMessage)
	if m < 0 {
		return 0 // at the end, the unfinished header is content
	}
	n := m + len(hMessage)
	s.inBody, s.header = true, buf[:n]
	s.kind, s.name = harmonyHeader(buf[:m])
	s.call, s.at, s.hold, s.argsDone, s.searched = nil, 0, 0, false, 0
	return n
}

// harmonyHeader reads a header's channel and recipient.
func harmonyHeader(h string) (bodyKind, string) {
	recipient := ""
	if i := strings.Index(h, "to="); i >= 0 {
		recipient = headerWord(h[i+len("to="):])
	}
	channel := ""
	if i := strings.Index(h, hChannel); i >= 0 {
		channel = headerWord(h[i+len(hChannel):])
	}
	switch {
	case strings.HasPrefix(recipient, "functions.") && len(recipient) > len("functions."):
		return bodyCall, strings.TrimPrefix(recipient, "functions.")
	case recipient != "":
		return bodyOther, ""
	case channel == "analysis":
		return bodyDrop, ""
	}
	return bodyText, ""
}

// headerWord returns s up to the first space or marker.
func headerWord(s string) string {
	if i := strings.IndexAny(s, " \t\n<"); i >= 0 {
		return s[:i]
	}
	return s
}

// terminator finds where the body in buf ends: the first terminator
// token and which, or -1 and the length of buf that holds no (partial)
// terminator.
func (s *harmonyScanner) terminator(buf string, atEnd bool) (at int, tok string, limit int) {
	from := max(0, s.searched-longest(harmonyBodyEnds)+1)
	at, tok = firstOf(buf[from:], harmonyBodyEnds)
	if at >= 0 {
		return at + from, tok, at + from
	}
	s.searched = len(buf)
	limit = len(buf)
	if !atEnd {
		if p := partialMarker(buf, harmonyBodyEnds); p >= 0 {
			limit = p
		}
	}
	return -1, "", limit
}

// endMessage ends the body at at, ended by tok: the length of the body
// with its terminator when that is an end token.
func (s *harmonyScanner) endMessage(at int, tok string) int {
	s.inBody, s.searched = false, 0
	if harmonyEndTokens[tok] {
		return at + len(tok)
	}
	return at
}

func (s *harmonyScanner) body(buf string, atEnd bool, e *emitter) int {
	if s.kind == bodyCall {
		n, ok := s.callBody(buf, atEnd, e)
		if ok {
			s.at -= n
			s.hold -= n
			s.searched = max(0, s.searched-n)
			return n
		}
		s.kind = bodyOther // not a call after all: the message is content, as written
	}
	at, tok, limit := s.terminator(buf, atEnd)
	if at < 0 {
		switch {
		case s.kind == bodyOther:
			if !atEnd {
				return 0
			}
			at = len(buf)
		case atEnd:
			at = len(buf)
		default: // stream text and drop analysis as it comes
			if limit == 0 {
				return 0
			}
			if s.kind == bodyText {
				e.content(buf[:limit])
			}
			s.searched = max(0, s.searched-limit)
			return limit
		}
	}
	n := s.endMessage(at, tok)
	switch s.kind {
	case bodyText:
		e.content(buf[:at])
	case bodyOther:
		e.content(s.header + buf[:n])
	}
	return n
}

// callBody reads a function message's body: its JSON arguments, streamed
// once committed. It returns false when the body turns out not to be a
// call (nothing of it decided).
func (s *harmonyScanner) callBody(buf string, atEnd bool, e *emitter) (int, bool) {
	at, tok, limit := s.terminator(buf, atEnd)
	ended := at >= 0 || atEnd // the body's text is all there
	if s.call == nil {
		i := skipSpace(buf, s.at)
		s.at = i
		switch {
		case i < limit && buf[i] == '{':
			s.call = newArgsReader(e, s.name)
		case i < limit:
			return 0, false
		case ended: // an empty body: a call without arguments
			e.call(Call{Name: s.name, Arguments: "{}"})
			return s.endMessage(limit, tok), true
		default:
			return s.hold, true
		}
	}
	if !s.argsDone {
		st := s.call.advance(buf, &s.at, &s.hold, limit, ended)
		switch st {
		case callMore:
			return s.hold, true
		case callFail:
			return 0, false
		case callBroken: // the rest of the body is text
			s.kind, s.searched = bodyText, 0
			return s.at, true
		}
		s.argsDone = true
	}
	i := skipSpace(buf, s.at)
	switch {
	case i < limit: // text after the arguments
		s.kind, s.searched = bodyText, 0
		return s.hold, true
	case ended:
		return s.endMessage(limit, tok), true
	}
	return s.hold, true
}
