package reasoning

import "strings"

// A Parser is one registered output format. It is immutable and safe for
// concurrent use; each response choice gets its own Stream.
type Parser struct {
	name    string
	special bool
	// split makes the state machine for one choice.
	split func(enabled bool) splitter
}

// A splitter is the per-choice state machine behind a Stream. push
// consumes text and appends what it can release; finish releases the rest.
type splitter interface {
	push(text string, out *output)
	finish(out *output)
}

// output collects the text a splitter releases for one call.
type output struct {
	reasoning strings.Builder
	content   strings.Builder
}

// Name returns the name the parser is registered under.
func (p *Parser) Name() string { return p.name }

// NeedsSpecialTokens reports whether the markers are special tokens the
// detokenizer must keep (gpt_oss/harmony and mistral: yes).
func (p *Parser) NeedsSpecialTokens() bool { return p.special }

// NewStream starts one choice. enabled=false (the request switched thinking
// off: chat_template_args.enable_thinking=false or a thinking field saying
// off) makes everything content, except that a complete explicit reasoning
// block is still split out.
func (p *Parser) NewStream(enabled bool) *Stream {
	return &Stream{s: p.split(enabled)}
}

// Parse splits a whole output at once. It gives what a Stream gives for
// the same text, however that text is split into deltas.
func (p *Parser) Parse(text string, enabled bool) (reasoning, content string) {
	s := p.NewStream(enabled)
	r1, c1 := s.Push(text)
	r2, c2 := s.Finish()
	return r1 + r2, c1 + c2
}

// A Stream splits one choice's deltas. It is not safe for concurrent use.
type Stream struct {
	s    splitter
	done bool
}

// Push takes the next delta, split anywhere (even inside a marker), and
// returns the reasoning and content it releases. A tail that may still
// become a marker is held back until the next Push or Finish.
func (s *Stream) Push(text string) (reasoning, content string) {
	if s.done || text == "" {
		return "", ""
	}
	var o output
	s.s.push(text, &o)
	return o.reasoning.String(), o.content.String()
}

// Finish ends the output and returns the text still held back. Later calls
// to Push and Finish return nothing.
func (s *Stream) Finish() (reasoning, content string) {
	if s.done {
		return "", ""
	}
	s.done = true
	var o output
	s.s.finish(&o)
	return o.reasoning.String(), o.content.String()
}
