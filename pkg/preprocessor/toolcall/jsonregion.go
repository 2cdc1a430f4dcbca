package toolcall

import "strings"

// jsonShape describes a region of calls written in JSON: what follows
// its opening marker, and what may close it.
type jsonShape struct {
	open     string // the marker the region starts with; "" for a lead
	close    string // a marker that may follow the calls, part of the region ("" for none)
	object   bool   // a call object {"name": ..., "arguments": {...}}
	list     bool   // a list of call objects [{...}, {...}]
	semis    bool   // call objects separated by ';'
	names    bool   // NAME{...} or NAME[ARGS]{...} (mistral)
	argsOf   string // the region is the arguments object of a call to this function
	declared bool   // a call must name one of the request's functions
	trailing bool   // spaces after the calls, at the end of the output, are the region's
}

func (sh *jsonShape) region(cx *scanCtx) region {
	r := &jsonRegion{sh: sh}
	if sh.declared {
		r.tools = cx.tools
	}
	return r
}

// Where a jsonRegion stands.
const (
	jpOpen     = iota // at the marker
	jpLead            // after the marker: spaces, then the calls
	jpName            // a function name (names)
	jpNamedArg        // after the name: spaces, then the arguments object
	jpCall            // reading a call
	jpListElem        // after '[' or ',': spaces, then a call object
	jpListNext        // after a list's call: ',' or ']'
	jpSemi            // after a call object: ';' or the end
	jpSemiNext        // after ';': a call object
	jpClose           // after the calls: the close marker, if any
)

// jsonRegion reads a region of JSON calls (see jsonShape), passing each
// call on as it streams (see callReader). The region is content when its
// first call fails; once a call is committed the region holds calls, and
// it ends, with the text after it scanned anew, where its shape stops
// (a list or separator not followed by another call, a call that breaks
// its JSON, a missing close marker).
type jsonRegion struct {
	sh    *jsonShape
	tools toolSet
	ph    int
	at    int // bytes of buf read
	// hold is the length of buf that is decided (or the region's, if the
	// region goes on): pieces of the region not known to belong to it
	// yet (a call not committed, a separator) lie after it.
	hold      int
	call      *callReader
	nameStart int
	name      string
	calls     int  // calls committed in the region
	list      bool // the calls are in a list
}

func (r *jsonRegion) read(buf string, atEnd bool, e *emitter) (int, bool) {
	n, done := r.run(buf, atEnd, e)
	if !done {
		r.at -= n
		r.hold -= n
		r.nameStart -= n
	}
	return n, done
}

func (r *jsonRegion) run(buf string, atEnd bool, e *emitter) (int, bool) {
	sh := r.sh
	for {
		switch r.ph {
		case jpOpen:
			r.at, r.ph = len(sh.open), jpLead
		case jpLead:
			i := skipSpace(buf, r.at)
			r.at = i
			if i == len(buf) {
				if atEnd {
					return r.fail(buf, i, e)
				}
				return r.hold, false
			}
			switch c := buf[i]; {
			case c == '{' && sh.argsOf != "":
				r.call, r.ph = newArgsReader(e, sh.argsOf), jpCall
			case c == '{' && sh.object:
				r.call, r.ph = newCallReader(e, r.tools), jpCall
			case c == '[' && sh.list:
				r.at, r.ph, r.list = i+1, jpListElem, true
			case sh.names && isNameByte(c):
				r.nameStart, r.ph = i, jpName
			default:
				return r.fail(buf, i, e)
			}
		case jpName:
			j := r.at
			for j < len(buf) && isNameByte(buf[j]) {
				j++
			}
			r.at = j
			if j == len(buf) && !atEnd {
				return r.hold, false
			}
			r.name = buf[r.nameStart:j]
			switch rest := buf[j:]; {
			case strings.HasPrefix(rest, mistralArgs):
				r.at += len(mistralArgs)
			case !atEnd && len(rest) < len(mistralArgs) && strings.HasPrefix(mistralArgs, rest):
				return r.hold, false // the name or [ARGS] may go on
			}
			r.ph = jpNamedArg
		case jpNamedArg:
			i := skipSpace(buf, r.at)
			r.at = i
			switch {
			case i == len(buf) && !atEnd:
				return r.hold, false
			case i == len(buf) || buf[i] != '{':
				return r.fail(buf, i, e)
			}
			r.call, r.ph = newArgsReader(e, r.name), jpCall
		case jpListElem:
			i := skipSpace(buf, r.at)
			r.at = i
			switch {
			case i == len(buf) && !atEnd:
				return r.hold, false
			case i < len(buf) && buf[i] == '{':
				r.call, r.ph = newCallReader(e, r.tools), jpCall
			case r.calls == 0:
				return r.fail(buf, i, e)
			default:
				return r.hold, true
			}
		case jpCall:
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
			switch {
			case r.list:
				r.ph = jpListNext
			case sh.semis && !r.call.argsOnly:
				r.ph = jpSemi
			default:
				r.ph = jpClose
			}
		case jpListNext, jpSemi:
			i := skipSpace(buf, r.at)
			r.at = i
			switch {
			case i == len(buf) && !atEnd:
				return r.hold, false
			case i == len(buf):
				return r.hold, true
			case r.ph == jpSemi && buf[i] == ';':
				r.at, r.ph = i+1, jpSemiNext
			case r.ph == jpListNext && buf[i] == ',':
				r.at, r.ph = i+1, jpListElem
			case r.ph == jpListNext && buf[i] == ']':
				r.at, r.hold, r.ph = i+1, i+1, jpClose
			default:
				return r.hold, true
			}
		case jpSemiNext:
			i := skipSpace(buf, r.at)
			r.at = i
			switch {
			case i == len(buf) && !atEnd:
				return r.hold, false
			case i < len(buf) && buf[i] == '{':
				r.call, r.ph = newCallReader(e, r.tools), jpCall
			default:
				return r.hold, true
			}
		case jpClose:
			i := skipSpace(buf, r.at)
			rest := buf[i:]
			switch {
			case sh.close != "" && strings.HasPrefix(rest, sh.close):
				return i + len(sh.close), true
			case !atEnd && rest == "" && (sh.close != "" || sh.trailing),
				!atEnd && sh.close != "" && len(rest) < len(sh.close) && strings.HasPrefix(sh.close, rest):
				return r.hold, false
			case sh.trailing && rest == "":
				return i, true
			}
			return r.hold, true
		}
	}
}

// fail ends the region at i: what was held of it is content.
func (r *jsonRegion) fail(buf string, i int, e *emitter) (int, bool) {
	e.content(buf[r.hold:i])
	return i, true
}
