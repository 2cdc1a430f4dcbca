package toolcall

import (
	"strings"
	"unicode/utf8"
)

// Parser finds tool calls in the output of one model family. A Parser is
// immutable and safe for concurrent use; each response choice gets its own
// Stream.
type Parser struct {
	name    string
	special bool
	newScan func(tools toolSet) scanner
}

// Name returns the name the parser is registered under.
func (p *Parser) Name() string { return p.name }

// NeedsSpecialTokens reports whether the format's markers are special tokens that the
// detokenizer must keep (skip_special_tokens=false), e.g. harmony's <|call|>, llama's <|python_tag|>, mistral's [TOOL_CALLS] when special.
func (p *Parser) NeedsSpecialTokens() bool { return p.special }

// NewStream starts one choice's parse. tools are the names of the request's functions;
// a parser whose format is ambiguous (pythonic, llama3_json plain JSON) uses them to decide what is a call; nil accepts any name.
func (p *Parser) NewStream(tools []string) *Stream {
	return &Stream{scan: p.newScan(newToolSet(tools))}
}

// Parse parses a whole output at once; it is the same as one Push of text
// followed by Finish.
func (p *Parser) Parse(text string, tools []string) (content string, calls []Call) {
	s := p.NewStream(tools)
	c1, k1 := s.Push(text)
	c2, k2 := s.Finish()
	return c1 + c2, append(k1, k2...)
}

// Stream is one choice's parse over its streamed text deltas. Text that
// cannot belong to a call comes back as content at once; text that may
// belong to one is held until the call completes (then it comes back as a
// Call) or turns out not to be one (then it comes back as content). Content
// never ends in the middle of a UTF-8 sequence before Finish. A Stream is
// not safe for concurrent use and must not be used after Finish.
type Stream struct {
	scan scanner
	// The text not yet decided is pending.String()[off:]. A Builder grows
	// without copying what it holds, so a long held call costs no copy per
	// delta; what has been decided is cut off now and then.
	pending strings.Builder
	off     int
	carry   string // decided content ending in an incomplete UTF-8 sequence
}

// Push takes the next text delta, split anywhere, and returns the content
// and the calls it completes, in output order.
func (s *Stream) Push(text string) (content string, calls []Call) {
	s.pending.WriteString(text)
	return s.run(false)
}

// Finish ends the output: a call still unfinished, or malformed, comes back
// as content, and all held text is released.
func (s *Stream) Finish() (content string, calls []Call) {
	return s.run(true)
}

func (s *Stream) run(atEnd bool) (string, []Call) {
	var b strings.Builder
	b.WriteString(s.carry)
	s.carry = ""
	var calls []Call
	all := s.pending.String()
	for s.off < len(all) {
		buf := all[s.off:]
		n, content, found := s.scan.next(buf, atEnd)
		if n == 0 {
			if atEnd { // a scanner's last word: whatever is left is text
				b.WriteString(buf)
				s.off = len(all)
			}
			break
		}
		b.WriteString(content)
		calls = append(calls, found...)
		s.off += n
	}
	if s.off > 4096 && s.off > len(all)/2 {
		rest := all[s.off:]
		s.pending = strings.Builder{}
		s.pending.WriteString(rest)
		s.off = 0
	}
	out := b.String()
	if !atEnd {
		cut := completeRunes(out)
		out, s.carry = out[:cut], out[cut:]
	}
	return out, calls
}

// completeRunes returns the length of s without a trailing incomplete UTF-8
// sequence.
func completeRunes(s string) int {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				return i
			}
			break
		}
	}
	return len(s)
}

// scanner is the format-specific part of a Stream.
type scanner interface {
	// next decides a prefix of buf (the undecided text) and returns its
	// length with the content and calls it yields. n == 0 asks for more
	// text; atEnd reports that no more will come (then n == 0 releases
	// buf as content).
	next(buf string, atEnd bool) (n int, content string, calls []Call)
}
