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
// (<|call|> is a stop token a backend may hide). Other messages:
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
	bodyCall                  // a function call, held until complete
	bodyOther                 // another recipient, returned raw
)

type harmonyScanner struct {
	inBody   bool
	searched int // a held body's first searched bytes hold no terminator
	kind     bodyKind
	name     string // the function of a bodyCall message
	header   string // the raw header with <|message|>, for bodyCall and bodyOther
}

func newHarmony(toolSet) scanner { return &harmonyScanner{} }

func (s *harmonyScanner) next(buf string, atEnd bool) (int, string, []Call) {
	if s.inBody {
		return s.body(buf, atEnd)
	}
	at, tok := firstOf(buf, harmonyTokens)
	switch {
	case at < 0:
		if !atEnd {
			if p := partialMarker(buf, harmonyTokens); p >= 0 {
				return p, buf[:p], nil
			}
		}
		return len(buf), buf, nil
	case at > 0:
		return at, buf[:at], nil
	case tok != hStart && tok != hChannel: // a stray control token
		return len(tok), "", nil
	}
	m := strings.Index(buf, hMessage)
	if m < 0 {
		return 0, "", nil // at the end, the unfinished header is content
	}
	n := m + len(hMessage)
	s.inBody, s.header = true, buf[:n]
	s.kind, s.name = harmonyHeader(buf[:m])
	return n, "", nil
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
	case strings.HasPrefix(recipient, "functions."):
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

func (s *harmonyScanner) body(buf string, atEnd bool) (int, string, []Call) {
	from := max(0, s.searched-longest(harmonyBodyEnds)+1)
	at, tok := firstOf(buf[from:], harmonyBodyEnds)
	if at >= 0 {
		at += from
	}
	if at < 0 {
		switch {
		case s.kind == bodyCall || s.kind == bodyOther:
			if !atEnd {
				s.searched = len(buf)
				return 0, "", nil
			}
			at = len(buf)
		case atEnd:
			at = len(buf)
		default: // stream text and drop analysis as it comes
			p := partialMarker(buf, harmonyBodyEnds)
			if p < 0 {
				p = len(buf)
			}
			if p == 0 {
				return 0, "", nil
			}
			if s.kind == bodyDrop {
				return p, "", nil
			}
			return p, buf[:p], nil
		}
	}
	n := at
	if harmonyEndTokens[tok] {
		n += len(tok)
	}
	s.inBody, s.searched = false, 0
	body := buf[:at]
	switch s.kind {
	case bodyDrop:
		return n, "", nil
	case bodyText:
		return n, body, nil
	case bodyCall:
		if args, ok := argumentsText(body); ok && strings.HasPrefix(args, "{") && s.name != "" {
			return n, "", []Call{{Name: s.name, Arguments: args}}
		}
	}
	return n, s.header + buf[:n], nil
}
