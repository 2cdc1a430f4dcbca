package toolcall

import "strings"

// DeepSeek V3 and V3.1. A block of calls:
//
//	<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>...<｜tool▁call▁end｜>...<｜tool▁calls▁end｜>
//
// where each call is, in V3 (type, then name, then a fenced JSON body):
//
//	function<｜tool▁sep｜>get_weather
//	```json
//	{"city": "Paris"}
//	```
//
// and in V3.1 (name, then the JSON arguments):
//
//	get_weather<｜tool▁sep｜>{"city": "Paris"}
//
// Each call streams once committed (see callReader). A block whose first
// call is malformed is content; after a call the block ends where its
// shape stops, and the text after is scanned anew. Spaces may separate
// the markers; the type is not checked.
const (
	dsCallsBegin = "<｜tool▁calls▁begin｜>"
	dsCallsEnd   = "<｜tool▁calls▁end｜>"
	dsCallBegin  = "<｜tool▁call▁begin｜>"
	dsCallEnd    = "<｜tool▁call▁end｜>"
	dsSep        = "<｜tool▁sep｜>"
	dsFence      = "```"
	dsFenceJSON  = "```json"
)

// Where a dsRegion stands.
const (
	dsOpen     = iota // at the block's marker
	dsCallOpen        // before a call, or the block's end
	dsHead            // before the separator (V3: the type; V3.1: the name)
	dsName            // V3: the name, up to the end of its line
	dsFenceOpen
	dsArgsStart
	dsArgs
	dsArgsTail // after the arguments: a fence, then the call's end marker
)

type dsRegion struct {
	v31      bool
	ph       int
	at, hold int // as in jsonRegion
	from     int // where the call's head (or name) starts
	searched int // a failed search for the head's end covered buf[:searched]
	name     string
	call     *callReader
	calls    int
}

func (r *dsRegion) read(buf string, atEnd bool, e *emitter) (int, bool) {
	n, done := r.run(buf, atEnd, e)
	if !done {
		r.at -= n
		r.hold -= n
		r.from -= n
		r.searched = max(0, r.searched-n)
	}
	return n, done
}

func (r *dsRegion) run(buf string, atEnd bool, e *emitter) (int, bool) {
	for {
		switch r.ph {
		case dsOpen:
			r.at, r.ph = len(dsCallsBegin), dsCallOpen
		case dsCallOpen:
			i := skipSpace(buf, r.at)
			rest := buf[i:]
			switch {
			case strings.HasPrefix(rest, dsCallBegin):
				r.at = i + len(dsCallBegin)
				r.from, r.searched, r.ph = r.at, 0, dsHead
			case r.calls > 0 && strings.HasPrefix(rest, dsCallsEnd):
				return i + len(dsCallsEnd), true
			case !atEnd && (isPrefix(rest, dsCallBegin) || r.calls > 0 && isPrefix(rest, dsCallsEnd)):
				return r.hold, false
			case r.calls == 0:
				return r.fail(buf, i, e)
			default:
				return r.hold, true
			}
		case dsHead, dsName:
			tokens := []string{dsSep}
			if r.ph == dsName {
				tokens = []string{"\n", dsCallEnd}
			}
			from := max(r.from, r.searched-len(dsCallEnd)+1)
			j, tok := firstOf(buf[from:], tokens)
			if j < 0 {
				r.searched = len(buf)
				if atEnd {
					return r.fail(buf, len(buf), e)
				}
				return r.hold, false
			}
			j += from
			if r.ph == dsHead && !r.v31 { // the type; the name follows the separator
				r.at = j + len(dsSep)
				r.from, r.searched, r.ph = r.at, 0, dsName
				continue
			}
			r.name = strings.TrimSpace(buf[r.from:j])
			if r.name == "" {
				return r.fail(buf, j, e)
			}
			r.at = j + len(tok)
			if tok == dsCallEnd { // no arguments
				e.call(Call{Name: r.name, Arguments: "{}"})
				r.calls++
				r.hold, r.ph = r.at, dsCallOpen
				continue
			}
			r.ph = dsFenceOpen
		case dsFenceOpen:
			i := skipSpace(buf, r.at)
			switch rest := buf[i:]; {
			case strings.HasPrefix(rest, dsFenceJSON):
				r.at = i + len(dsFenceJSON)
			case !atEnd && isPrefix(rest, dsFenceJSON):
				return r.hold, false
			case strings.HasPrefix(rest, dsFence):
				r.at = i + len(dsFence)
			}
			r.ph = dsArgsStart
		case dsArgsStart:
			i := skipSpace(buf, r.at)
			rest := buf[i:]
			switch {
			case strings.HasPrefix(rest, "{"):
				r.at, r.call, r.ph = i, newArgsReader(e, r.name), dsArgs
			case strings.HasPrefix(rest, dsCallEnd): // no arguments
				e.call(Call{Name: r.name, Arguments: "{}"})
				r.calls++
				r.at = i + len(dsCallEnd)
				r.hold, r.ph = r.at, dsCallOpen
			case !atEnd && isPrefix(rest, dsCallEnd):
				return r.hold, false
			default:
				return r.fail(buf, i, e)
			}
		case dsArgs:
			st := r.call.advance(buf, &r.at, &r.hold, len(buf), atEnd)
			switch st {
			case callMore:
				return r.hold, false
			case callFail:
				return r.fail(buf, r.at, e)
			case callBroken:
				return r.at, true
			}
			r.calls++
			r.ph = dsArgsTail
		case dsArgsTail:
			i := skipSpace(buf, r.at)
			if strings.HasPrefix(buf[i:], dsFence) {
				i = skipSpace(buf, i+len(dsFence))
			}
			rest := buf[i:]
			switch {
			case strings.HasPrefix(rest, dsCallEnd):
				r.at = i + len(dsCallEnd)
				r.hold, r.ph = r.at, dsCallOpen
			case !atEnd && (isPrefix(rest, dsCallEnd) || isPrefix(buf[skipSpace(buf, r.at):], dsFence)):
				return r.hold, false
			default:
				return r.hold, true
			}
		}
	}
}

// fail ends the region at i: what was held of it is content.
func (r *dsRegion) fail(buf string, i int, e *emitter) (int, bool) {
	e.content(buf[r.hold:i])
	return i, true
}

// isPrefix reports whether s could begin tok: s is a proper prefix of
// tok (the empty string included).
func isPrefix(s, tok string) bool { return len(s) < len(tok) && strings.HasPrefix(tok, s) }

func newDeepseekV3(tools toolSet) scanner {
	return newMarked(tools, nil, rule{open: dsCallsBegin, region: func(*scanCtx) region { return &dsRegion{} }})
}

func newDeepseekV31(tools toolSet) scanner {
	return newMarked(tools, nil, rule{open: dsCallsBegin, region: func(*scanCtx) region { return &dsRegion{v31: true} }})
}
