package toolcall

// lexer checks a JSON object or array one byte at a time, as
// encoding/json's scanner does (RFC 8259; strings are not checked for
// valid UTF-8), so that a call's arguments can be passed on while they
// stream, byte by byte, as far as they are well formed. Besides the
// verdict on each byte it reports where keys and values begin and end,
// which is what a reader of a call object needs.
type lexer struct {
	stack []byte // the open containers, '{' or '['
	state lexState
	lit   string // the rest of the literal being read (true, false, null)
	hex   int    // hex digits still due in a \u escape
	key   bool   // the string being read is an object key
	// values counts the values begun so far (keys are not values).
	values int

	// The events of the last step.
	began    int // depth of the value that began, or -1
	keyBegan bool
	keyEnded bool
	ends     [2]lexEnd // values that ended, innermost first
	nEnds    int
}

// lexEnd is a value that ended in a step: its depth (the number of
// containers around it), and whether it ended before the step's byte (a
// number, ended by the byte after it) rather than with it.
type lexEnd struct {
	depth  int
	before bool
}

type lexState uint8

const (
	lsTop        lexState = iota // the top-level object or array must come
	lsValue                      // a value must come (after ':', or ',' in an array)
	lsValueOrEnd                 // after '[': a value or ']'
	lsKeyOrEnd                   // after '{': a key or '}'
	lsKey                        // after ',' in an object: a key
	lsColon                      // after a key: ':'
	lsAfter                      // after a value in a container: ',' or its close
	lsString
	lsEscape
	lsHex
	lsLiteral
	lsNeg     // after '-'
	lsZero    // a leading 0
	lsInt     // digits of the integer part
	lsDot     // after '.'
	lsFrac    // digits of the fraction
	lsExp     // after 'e'
	lsExpSign // after the exponent's sign
	lsExpInt  // digits of the exponent
	lsDone    // the top-level value is complete
	lsError
)

// lexResult is the verdict on one byte.
type lexResult uint8

const (
	lexSpace lexResult = iota // whitespace between tokens, not part of the compact form
	lexByte                   // a byte of the value
	lexDone                   // the byte closed the top-level value
	lexError                  // the byte cannot continue a JSON text
)

// depth is the number of containers open.
func (l *lexer) depth() int { return len(l.stack) }

// step takes the next byte.
func (l *lexer) step(c byte) lexResult {
	l.began, l.keyBegan, l.keyEnded, l.nEnds = -1, false, false, 0
	return l.do(c)
}

func (l *lexer) do(c byte) lexResult {
	switch l.state {
	case lsString:
		switch {
		case c == '"':
			if l.key {
				l.key, l.keyEnded, l.state = false, true, lsColon
				return lexByte
			}
			return l.endScalar(false)
		case c == '\\':
			l.state = lsEscape
		case c < 0x20:
			return l.fail()
		}
		return lexByte
	case lsTop:
		switch {
		case isSpace(c):
			return lexSpace
		case c == '{' || c == '[':
			return l.begin(c)
		}
		return l.fail()
	case lsValue, lsValueOrEnd:
		switch {
		case isSpace(c):
			return lexSpace
		case c == ']' && l.state == lsValueOrEnd:
			return l.close(c)
		}
		return l.begin(c)
	case lsKeyOrEnd, lsKey:
		switch {
		case isSpace(c):
			return lexSpace
		case c == '}' && l.state == lsKeyOrEnd:
			return l.close(c)
		case c == '"':
			l.key, l.keyBegan, l.state = true, true, lsString
			return lexByte
		}
		return l.fail()
	case lsColon:
		switch {
		case isSpace(c):
			return lexSpace
		case c == ':':
			l.state = lsValue
			return lexByte
		}
		return l.fail()
	case lsAfter:
		switch {
		case isSpace(c):
			return lexSpace
		case c == ',':
			l.state = lsValue
			if l.stack[len(l.stack)-1] == '{' {
				l.state = lsKey
			}
			return lexByte
		case c == '}' || c == ']':
			return l.close(c)
		}
		return l.fail()
	case lsEscape:
		switch c {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			l.state = lsString
		case 'u':
			l.state, l.hex = lsHex, 4
		default:
			return l.fail()
		}
		return lexByte
	case lsHex:
		if !isHex(c) {
			return l.fail()
		}
		if l.hex--; l.hex == 0 {
			l.state = lsString
		}
		return lexByte
	case lsLiteral:
		if c != l.lit[0] {
			return l.fail()
		}
		if l.lit = l.lit[1:]; l.lit == "" {
			return l.endScalar(false)
		}
		return lexByte
	case lsNeg:
		switch {
		case c == '0':
			l.state = lsZero
		case '1' <= c && c <= '9':
			l.state = lsInt
		default:
			return l.fail()
		}
		return lexByte
	case lsZero, lsInt, lsFrac:
		switch {
		case isDigit(c) && l.state != lsZero:
		case c == '.' && l.state != lsFrac:
			l.state = lsDot
		case c == 'e' || c == 'E':
			l.state = lsExp
		default:
			return l.endNumber(c)
		}
		return lexByte
	case lsDot:
		if !isDigit(c) {
			return l.fail()
		}
		l.state = lsFrac
		return lexByte
	case lsExp:
		switch {
		case c == '+' || c == '-':
			l.state = lsExpSign
		case isDigit(c):
			l.state = lsExpInt
		default:
			return l.fail()
		}
		return lexByte
	case lsExpSign:
		if !isDigit(c) {
			return l.fail()
		}
		l.state = lsExpInt
		return lexByte
	case lsExpInt:
		if isDigit(c) {
			return lexByte
		}
		return l.endNumber(c)
	}
	return l.fail() // lsDone, lsError
}

// begin starts the value whose first byte is c.
func (l *lexer) begin(c byte) lexResult {
	l.began = len(l.stack)
	l.values++
	switch {
	case c == '{':
		l.stack = append(l.stack, c)
		l.state = lsKeyOrEnd
	case c == '[':
		l.stack = append(l.stack, c)
		l.state = lsValueOrEnd
	case c == '"':
		l.state = lsString
	case c == '-':
		l.state = lsNeg
	case c == '0':
		l.state = lsZero
	case '1' <= c && c <= '9':
		l.state = lsInt
	case c == 't':
		l.state, l.lit = lsLiteral, "rue"
	case c == 'f':
		l.state, l.lit = lsLiteral, "alse"
	case c == 'n':
		l.state, l.lit = lsLiteral, "ull"
	default:
		l.began = -1
		l.values--
		return l.fail()
	}
	return lexByte
}

// close ends the innermost container with c, if c matches it.
func (l *lexer) close(c byte) lexResult {
	open := l.stack[len(l.stack)-1]
	if open == '{' && c != '}' || open == '[' && c != ']' {
		return l.fail()
	}
	l.stack = l.stack[:len(l.stack)-1]
	l.ended(false)
	if len(l.stack) == 0 {
		l.state = lsDone
		return lexDone
	}
	l.state = lsAfter
	return lexByte
}

// endScalar ends a string or literal (never top-level: only containers
// are).
func (l *lexer) endScalar(before bool) lexResult {
	l.ended(before)
	l.state = lsAfter
	return lexByte
}

// endNumber ends a number at c, which then goes on as the byte after it.
func (l *lexer) endNumber(c byte) lexResult {
	l.endScalar(true)
	return l.do(c)
}

func (l *lexer) ended(before bool) {
	l.ends[l.nEnds] = lexEnd{depth: len(l.stack), before: before}
	l.nEnds++
}

func (l *lexer) fail() lexResult {
	l.state = lsError
	return lexError
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHex(c byte) bool {
	return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
