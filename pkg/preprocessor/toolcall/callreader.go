package toolcall

import (
	"encoding/json"
	"strings"
)

// callReader reads one call written as JSON, byte by byte, and decides
// when it is a call: either a call object {"name": ..., "arguments":
// {...}} ("parameters" is taken for "arguments"; an "id" string before
// the arguments is kept), or, for a call whose name the format gives
// elsewhere, the arguments object alone.
//
// The call is committed once it is known to be one: its name is known
// and its arguments have started well, with the object's opening brace,
// its first key, the colon and the first byte of a valid value (or the
// whole of an empty object, an arguments string holding an object, null,
// or no arguments at all). Until then nothing is emitted and a failure
// makes the text content. From then on the arguments are passed on byte
// by byte, without the spaces between tokens, as far as they are well
// formed JSON; a byte that breaks them ends the call ("broken"), with
// the arguments it had.
type callReader struct {
	lx       lexer
	argsOnly bool    // the top-level value is the arguments object
	tools    toolSet // non-nil: the name must be one of these
	e        *emitter

	name, id string
	hasName  bool
	member   memberKind // the outer object's member being read
	keyRaw   []byte
	raw      []byte // the member value being collected
	args     []byte // arguments held until the commit
	argState argState
	argsBase int  // lx.values when the arguments object began
	inValue  bool // reading a member value (or the arguments object)

	committed bool
	ended     bool
}

type memberKind uint8

const (
	memberOther memberKind = iota
	memberName
	memberID
	memberArgs
)

type argState uint8

const (
	argsNone   argState = iota
	argsObject          // the arguments object is being read
	argsString          // an arguments string (or null) is being collected
	argsDone            // the arguments are complete
)

// callStatus is where a callReader stands after a byte.
type callStatus uint8

const (
	callMore   callStatus = iota // the call goes on
	callDone                     // the byte ended the call's text; the call was emitted
	callFail                     // not a call: the text is content
	callBroken                   // a committed call whose JSON broke at the byte
)

func newCallReader(e *emitter, tools toolSet) *callReader {
	r := &callReader{e: e, tools: tools}
	r.lx.state = lsTop
	return r
}

// newArgsReader reads the arguments object of a call to name.
func newArgsReader(e *emitter, name string) *callReader {
	r := &callReader{e: e, argsOnly: true, name: name, hasName: true, member: memberArgs}
	r.lx.state = lsTop
	return r
}

// feed reads buf[at:limit] up to the end of the call's text and returns
// where it stopped and why: on callMore it has read all of it; on
// callDone stop is just past the call's text; on callFail and callBroken
// stop is the byte that showed the text is not (or no longer) a call,
// not read: the caller scans on from there.
func (r *callReader) feed(buf string, at, limit int) (stop int, st callStatus) {
	for i := at; i < limit; i++ {
		if r.committed && r.argState == argsObject && r.lx.state == lsString {
			// Inside a string of the arguments being passed on: its plain
			// bytes go out as a run (a long argument is mostly these).
			j := i
			for j < limit && buf[j] != '"' && buf[j] != '\\' && buf[j] >= 0x20 {
				j++
			}
			r.e.argsText(buf[i:j])
			if i = j; i == limit {
				break
			}
		}
		switch st := r.step(buf[i]); st {
		case callMore:
		case callDone:
			return i + 1, st
		default:
			return i, st
		}
	}
	return limit, callMore
}

// advance feeds buf[*at:limit] to the reader, cuts the call short when
// the output ended (ended) before it did, and moves *at past what it
// read and, once the call is committed, *hold with it (what the caller
// may let go of).
func (r *callReader) advance(buf string, at, hold *int, limit int, ended bool) callStatus {
	stop, st := r.feed(buf, *at, limit)
	*at = stop
	if st == callMore && ended {
		st = r.cut()
	}
	if r.committed {
		*hold = stop
	}
	return st
}

// step reads one byte.
func (r *callReader) step(c byte) callStatus {
	res := r.lx.step(c)
	if res == lexError {
		return r.broke()
	}
	lx := &r.lx
	if lx.began == 0 && c != '{' {
		return r.fail() // a call, or its arguments, is an object
	}
	// Keys of the call object.
	if !r.argsOnly && lx.depth() == 1 && (lx.key || lx.keyEnded) {
		if lx.keyBegan {
			r.keyRaw = r.keyRaw[:0]
		}
		r.keyRaw = append(r.keyRaw, c)
		if lx.keyEnded {
			r.member = memberOf(r.keyRaw)
		}
	}
	// A member value (or the arguments object) beginning.
	if lx.began == r.argsDepth() {
		r.inValue = true
		switch r.member {
		case memberName, memberID:
			r.raw = r.raw[:0]
		case memberArgs:
			switch {
			case r.argState != argsNone:
				r.member = memberOther // a second arguments member is ignored
			case c == '{':
				r.argState, r.argsBase = argsObject, lx.values
			case c == '"' || c == 'n' && !r.argsOnly:
				r.argState = argsString
				r.raw = r.raw[:0]
			default:
				return r.fail()
			}
		}
	}
	// The byte itself.
	if res != lexSpace && r.inValue {
		switch {
		case r.member == memberArgs && r.argState == argsObject:
			if r.committed {
				r.e.arg(c)
			} else {
				r.args = append(r.args, c)
			}
		case r.member == memberName || r.member == memberID || r.member == memberArgs && r.argState == argsString:
			r.raw = append(r.raw, c)
		}
	}
	// Values ending.
	for k := range lx.nEnds {
		end := lx.ends[k]
		if end.depth != r.argsDepth() && !(end.depth == 0 && !r.argsOnly) {
			continue
		}
		if end.depth == r.argsDepth() {
			if end.before && r.inValue && len(r.raw) > 0 && r.member != memberArgs {
				r.raw = r.raw[:len(r.raw)-1] // the byte that ended a number is not the value's
			}
			r.inValue = false
		}
		if st := r.valueEnded(end.depth); st != callMore {
			return st
		}
	}
	return r.maybeCommit()
}

// argsDepth is the depth of the arguments value: the top level, or a
// member of the call object.
func (r *callReader) argsDepth() int {
	if r.argsOnly {
		return 0
	}
	return 1
}

// valueEnded handles the end of a value at depth.
func (r *callReader) valueEnded(depth int) callStatus {
	switch {
	case depth == 0 && r.argsOnly:
		r.argState = argsDone
		if st := r.maybeCommit(); st != callMore {
			return st
		}
		return r.finish()
	case depth == 0:
		if !r.hasName {
			return r.fail()
		}
		if r.argState == argsNone {
			r.args, r.argState = append(r.args[:0], "{}"...), argsDone
		}
		if st := r.maybeCommit(); st != callMore {
			return st
		}
		return r.finish()
	}
	kind := r.member
	r.member = memberOther
	switch kind {
	case memberName:
		if r.hasName {
			return callMore
		}
		var name string
		if json.Unmarshal(r.raw, &name) != nil || strings.TrimSpace(name) == "" {
			return r.fail()
		}
		r.name, r.hasName = strings.TrimSpace(name), true
		if r.tools != nil && !r.tools[r.name] {
			return r.fail()
		}
	case memberID:
		if !r.committed {
			_ = json.Unmarshal(r.raw, &r.id) // a non-string id is ignored
		}
	case memberArgs:
		if r.argState == argsString {
			text, ok := argumentsText(string(r.raw))
			if !ok {
				return r.fail()
			}
			r.args = append(r.args[:0], text...)
		}
		r.argState = argsDone
		if r.committed && !r.ended {
			r.e.end()
			r.ended = true
		}
	}
	return callMore
}

// maybeCommit commits the call once it is known to be one.
func (r *callReader) maybeCommit() callStatus {
	if r.committed || !r.hasName {
		return callMore
	}
	switch r.argState {
	case argsDone:
	case argsObject:
		if r.lx.values == r.argsBase && r.lx.depth() > r.argsDepth() {
			return callMore // no value inside the object yet
		}
	default:
		return callMore
	}
	r.committed = true
	r.e.begin(r.id, r.name)
	r.e.argsText(string(r.args))
	r.args = nil
	if r.argState == argsDone {
		r.e.end()
		r.ended = true
	}
	return callMore
}

// finish ends a call whose text is complete.
func (r *callReader) finish() callStatus {
	if !r.ended {
		r.e.end()
		r.ended = true
	}
	return callDone
}

// fail gives up on a call that is not committed.
func (r *callReader) fail() callStatus {
	if r.committed {
		return r.broke()
	}
	r.lx.state = lsError
	return callFail
}

// broke ends a call whose text cannot go on: a committed call ends with
// the arguments it had.
func (r *callReader) broke() callStatus {
	r.lx.state = lsError
	if !r.committed {
		return callFail
	}
	if !r.ended {
		r.e.end()
		r.ended = true
	}
	return callBroken
}

// cut ends the call where the text stops short of its end (a marker that
// closes the region, or the end of the output): a committed call keeps
// the arguments it had and is done; anything else is not a call.
func (r *callReader) cut() callStatus {
	if !r.committed {
		return callFail
	}
	r.finish()
	return callDone
}

// memberOf names the member a key introduces.
func memberOf(rawKey []byte) memberKind {
	var key string
	if json.Unmarshal(rawKey, &key) != nil {
		return memberOther
	}
	switch key {
	case "name":
		return memberName
	case "id":
		return memberID
	case "arguments", "parameters":
		return memberArgs
	}
	return memberOther
}
