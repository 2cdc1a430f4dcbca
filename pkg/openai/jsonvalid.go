package openai

import (
	"encoding/binary"
	"math/bits"
)

// maxJSONDepth is encoding/json's nesting limit: deeper documents are
// invalid.
const maxJSONDepth = 10000

// validJSON reports whether b is exactly one JSON value with optional
// surrounding whitespace. It agrees with json.Valid on every input (bytes
// in strings are not checked for UTF-8, as there, and nesting deeper than
// 10000 is refused, as there) and is several times faster on the long
// strings of chat contents.
func validJSON(b []byte) bool {
	i := validValue(b, skipSpace(b, 0), 0)
	return i >= 0 && skipSpace(b, i) == len(b)
}

// skipSpace returns the offset of the first non-whitespace byte at or
// after i.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// validValue checks the value at b[i], inside depth containers, and
// returns the offset just after it, or -1.
func validValue(b []byte, i, depth int) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '"':
		return validString(b, i)
	case c == '{':
		return validObject(b, i, depth+1)
	case c == '[':
		return validArray(b, i, depth+1)
	case c == 't':
		return validLiteral(b, i, "true")
	case c == 'f':
		return validLiteral(b, i, "false")
	case c == 'n':
		return validLiteral(b, i, "null")
	case c == '-' || isDecDigit(c):
		return validNumber(b, i)
	}
	return -1
}

// validObject checks the object at b[i], the depth-th container.
func validObject(b []byte, i, depth int) int {
	if depth > maxJSONDepth {
		return -1
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return -1
		}
		if i = validString(b, i); i < 0 {
			return -1
		}
		if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
			return -1
		}
		if i = validValue(b, skipSpace(b, i+1), depth); i < 0 {
			return -1
		}
		if i = skipSpace(b, i); i >= len(b) {
			return -1
		}
		switch b[i] {
		case '}':
			return i + 1
		case ',':
			i = skipSpace(b, i+1)
		default:
			return -1
		}
	}
}

// validArray checks the array at b[i], the depth-th container.
func validArray(b []byte, i, depth int) int {
	if depth > maxJSONDepth {
		return -1
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1
	}
	for {
		if i = validValue(b, i, depth); i < 0 {
			return -1
		}
		if i = skipSpace(b, i); i >= len(b) {
			return -1
		}
		switch b[i] {
		case ']':
			return i + 1
		case ',':
			i = skipSpace(b, i+1)
		default:
			return -1
		}
	}
}

// validLiteral checks that lit is at b[i].
func validLiteral(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// validNumber checks -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at
// b[i]; what may follow it is the caller's to check.
func validNumber(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case isDecDigit(b[i]):
		i = skipDigits(b, i+1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if i++; i >= len(b) || !isDecDigit(b[i]) {
			return -1
		}
		i = skipDigits(b, i+1)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		if i++; i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDecDigit(b[i]) {
			return -1
		}
		i = skipDigits(b, i+1)
	}
	return i
}

func isDecDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHexDigit(c byte) bool {
	return isDecDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// skipDigits returns the offset of the first non-digit at or after i.
func skipDigits(b []byte, i int) int {
	for i < len(b) && isDecDigit(b[i]) {
		i++
	}
	return i
}

// SWAR constants: every byte 0x01, every byte 0x80.
const (
	swarOnes  = 0x0101010101010101
	swarHighs = 0x8080808080808080
)

// stringStops returns a mask whose lowest set bit is the high bit of the
// first byte of w (little endian) that is a control character, a quote or
// a backslash, the bytes a string scan must stop at; 0 when there is
// none. Bits above the lowest may be spurious.
func stringStops(w uint64) uint64 {
	q := w ^ ('"' * swarOnes)
	s := w ^ ('\\' * swarOnes)
	// (x - ones) &^ x flags the zero bytes of x and (x - 0x20*ones) &^ x
	// the bytes below 0x20, exactly up to the first one.
	return ((w-0x20*swarOnes)&^w | (q-swarOnes)&^q | (s-swarOnes)&^s) & swarHighs
}

// validString checks the string whose opening quote is b[i], eight bytes
// at a time between escapes.
func validString(b []byte, i int) int {
	i++
	for {
		for i+8 <= len(b) {
			if m := stringStops(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		if i >= len(b) {
			return -1
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c == '\\':
			if i++; i >= len(b) {
				return -1
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if len(b)-i < 5 || !isHexDigit(b[i+1]) || !isHexDigit(b[i+2]) || !isHexDigit(b[i+3]) || !isHexDigit(b[i+4]) {
					return -1
				}
				i += 5
			default:
				return -1
			}
		case c < 0x20:
			return -1
		default:
			i++
		}
	}
}
