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
	return &Stream{scan: p.newScan(newToolSet(tools)), em: emitter{cur: -1}}
}

// Parse parses a whole output at once: one Push of text followed by
// Finish, with the deltas folded into the content and the whole calls.
func (p *Parser) Parse(text string, tools []string) (content string, calls []Call) {
	s := p.NewStream(tools)
	return Fold(append(s.Push(text), s.Finish()...))
}

// Delta is one piece of what a Stream decides, in output order: text that
// is content, or a piece of a tool call.
type Delta struct {
	// Content is text outside calls; it is empty in a call's delta.
	Content string
	// Call is a piece of a tool call, or nil for content.
	Call *CallDelta
}

// CallDelta is a piece of one tool call, as OpenAI streams a call: the
// first piece names the function, the pieces' Arguments add up to the
// call's arguments.
type CallDelta struct {
	// Index is the call's number among the output's calls, from 0.
	Index int
	// Name is set in the call's first delta only (a name is never empty).
	Name string
	// ID is the id the format carried (in the first delta), else "": the
	// caller assigns one.
	ID string
	// Arguments is the next fragment of the arguments' compact JSON text.
	Arguments string
}

// Fold adds deltas up: the content, and each call whole, in order.
func Fold(deltas []Delta) (content string, calls []Call) {
	var b strings.Builder
	var args []*strings.Builder
	for _, d := range deltas {
		if d.Call == nil {
			b.WriteString(d.Content)
			continue
		}
		for len(calls) <= d.Call.Index {
			calls = append(calls, Call{})
			args = append(args, &strings.Builder{})
		}
		if d.Call.Name != "" {
			calls[d.Call.Index].Name, calls[d.Call.Index].ID = d.Call.Name, d.Call.ID
		}
		args[d.Call.Index].WriteString(d.Call.Arguments)
	}
	for i := range calls {
		calls[i].Arguments = args[i].String()
	}
	return b.String(), calls
}

// Stream is one choice's parse over its streamed text deltas. Text that
// cannot belong to a call comes back as content at once; text that may
// start one is held until the call is known to be one (then its name and
// arguments come back as they arrive) or turns out not to be (then it
// comes back as content). Neither content nor an arguments fragment ends
// in the middle of a UTF-8 sequence before Finish. A Stream is not safe
// for concurrent use and must not be used after Finish.
type Stream struct {
	scan scanner
	em   emitter
	// The text not yet decided is pending.String()[off:]. A Builder grows
	// without copying what it holds, so a long held call costs no copy per
	// delta; what has been decided is cut off now and then.
	pending strings.Builder
	off     int
	// carry is decided text ending in an incomplete UTF-8 sequence, held
	// for the next Push: content, or the arguments of call em.cur.
	carry     string
	carryArgs bool
}

// Push takes the next text delta, split anywhere, and returns what it
// decides, in output order.
func (s *Stream) Push(text string) []Delta {
	s.pending.WriteString(text)
	return s.run(false)
}

// Finish ends the output: held text that is not a call comes back as
// content, and a call cut short ends with the arguments it had.
func (s *Stream) Finish() []Delta {
	return s.run(true)
}

func (s *Stream) run(atEnd bool) []Delta {
	e := &s.em
	e.out = nil
	if s.carry != "" {
		if s.carryArgs {
			e.argsText(s.carry)
		} else {
			e.content(s.carry)
		}
		s.carry = ""
	}
	all := s.pending.String()
	for s.off < len(all) {
		buf := all[s.off:]
		n := s.scan.next(buf, atEnd, e)
		if n == 0 {
			if atEnd { // a scanner's last word: whatever is left is text
				e.content(buf)
				s.off = len(all)
			}
			break
		}
		s.off += n
	}
	e.flush()
	if s.off > 4096 && s.off > len(all)/2 {
		rest := all[s.off:]
		s.pending = strings.Builder{}
		s.pending.WriteString(rest)
		s.off = 0
	}
	if !atEnd {
		s.holdPartialRune()
	}
	out := e.out
	e.out = nil
	return out
}

// holdPartialRune moves a trailing incomplete UTF-8 sequence of the last
// delta into the carry.
func (s *Stream) holdPartialRune() {
	out := s.em.out
	if len(out) == 0 {
		return
	}
	last := &out[len(out)-1]
	text := &last.Content
	if last.Call != nil {
		text = &last.Call.Arguments
	}
	cut := completeRunes(*text)
	if cut == len(*text) {
		return
	}
	s.carry, s.carryArgs = (*text)[cut:], last.Call != nil
	*text = (*text)[:cut]
	if *text == "" && (last.Call == nil || last.Call.Name == "") {
		s.em.out = out[:len(out)-1]
	}
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
	// next decides a prefix of buf (the undecided text), gives what it
	// yields to e, and returns its length. n == 0 asks for more text;
	// atEnd reports that no more will come (then n == 0 releases buf as
	// content).
	next(buf string, atEnd bool, e *emitter) (n int)
}

// emitter collects the deltas a Stream decides, merging neighbours: runs
// of content, and runs of one call's arguments.
type emitter struct {
	out  []Delta
	next int    // the index of the next call
	cur  int    // the call whose arguments come, or -1
	args []byte // arguments of cur not yet in out
}

func (e *emitter) content(s string) {
	if s == "" {
		return
	}
	e.flush()
	if n := len(e.out); n > 0 && e.out[n-1].Call == nil {
		e.out[n-1].Content += s
		return
	}
	e.out = append(e.out, Delta{Content: s})
}

// begin starts a call.
func (e *emitter) begin(id, name string) {
	e.flush()
	e.cur = e.next
	e.next++
	e.out = append(e.out, Delta{Call: &CallDelta{Index: e.cur, ID: id, Name: name}})
}

func (e *emitter) arg(c byte) { e.args = append(e.args, c) }

func (e *emitter) argsText(s string) { e.args = append(e.args, s...) }

// end ends the current call.
func (e *emitter) end() {
	e.flush()
	e.cur = -1
}

// call emits a whole call.
func (e *emitter) call(c Call) {
	e.begin(c.ID, c.Name)
	e.argsText(c.Arguments)
	e.end()
}

func (e *emitter) flush() {
	if len(e.args) == 0 {
		return
	}
	if n := len(e.out); n > 0 && e.out[n-1].Call != nil && e.out[n-1].Call.Index == e.cur {
		e.out[n-1].Call.Arguments += string(e.args)
	} else {
		e.out = append(e.out, Delta{Call: &CallDelta{Index: e.cur, Arguments: string(e.args)}})
	}
	e.args = e.args[:0]
}
