// Package strictjson reads the part of JSON that every decoder reads the
// same way, without reflection: objects whose keys are matched exactly,
// strings whose escapes are the simple ones (no surrogate halves) and
// whose bytes are valid UTF-8, numbers that fit the type asked for, true,
// false and null. A Reader that meets anything else (or bad JSON) stops
// and reports it: its caller then decodes the same bytes with
// encoding/json, which gives the answer and the error. So a decoder built
// on it is exact by construction wherever it answers, and its fuzz test
// only has to compare the two where it does.
//
// It serves the messages the stack writes itself on the hot path (a
// request to a worker, its headers, an engine's terminal output), whose
// shapes it covers. AppendString is the other direction: a string
// written exactly as encoding/json writes it, for the writers of those
// messages that do without reflection.
package strictjson

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// Reader reads one JSON text. After the first value outside the subset
// (or a syntax error) OK is false and every method returns a zero value.
type Reader struct {
	b   []byte
	i   int
	bad bool
}

// New returns a Reader over b.
func New(b []byte) *Reader { return &Reader{b: b} }

// OK reports whether everything read so far was in the subset.
func (r *Reader) OK() bool { return !r.bad }

// Fail marks the text as outside what the caller decodes (an unknown
// key, say).
func (r *Reader) Fail() { r.bad = true }

// End reports whether the text was read whole, within the subset: only
// whitespace is left.
func (r *Reader) End() bool {
	r.ws()
	return !r.bad && r.i == len(r.b)
}

func (r *Reader) ws() { r.i = skipSpace(r.b, r.i) }

// peek returns the next byte after whitespace (0 at the end).
func (r *Reader) peek() byte {
	r.ws()
	if r.bad || r.i >= len(r.b) {
		return 0
	}
	return r.b[r.i]
}

// Peek returns the next byte after whitespace (0 at the end or once the
// reader failed): what the next value is.
func (r *Reader) Peek() byte { return r.peek() }

// expect consumes c after whitespace, or fails.
func (r *Reader) expect(c byte) {
	if r.peek() != c {
		r.bad = true
		return
	}
	r.i++
}

// literal consumes word (true, false, null) if it comes next.
func (r *Reader) literal(word string) bool {
	if r.peek() != word[0] || len(r.b)-r.i < len(word) || string(r.b[r.i:r.i+len(word)]) != word {
		return false
	}
	r.i += len(word)
	return true
}

// Null consumes a null if one comes next and reports whether it did.
func (r *Reader) Null() bool { return !r.bad && r.literal("null") }

// Bool reads true or false.
func (r *Reader) Bool() bool {
	switch {
	case r.bad:
	case r.literal("true"):
		return true
	case r.literal("false"):
	default:
		r.bad = true
	}
	return false
}

// Object reads an object, calling member with each key (its bytes, valid
// only during the call) with the reader at the member's value, which
// member must read (or Fail). null is not an object here.
func (r *Reader) Object(member func(key []byte)) {
	r.expect('{')
	if r.peek() == '}' {
		r.i++
		return
	}
	for !r.bad {
		key, ok := r.rawString()
		if !ok {
			r.bad = true
			return
		}
		r.expect(':')
		if r.bad {
			return
		}
		member(key)
		switch r.peek() {
		case ',':
			r.i++
		case '}':
			r.i++
			return
		default:
			r.bad = true
		}
	}
}

// Array reads an array, calling elem with the reader at each element,
// which elem must read (or Fail). null is not an array here.
func (r *Reader) Array(elem func()) {
	r.expect('[')
	if r.peek() == ']' {
		r.i++
		return
	}
	for !r.bad {
		elem()
		switch r.peek() {
		case ',':
			r.i++
		case ']':
			r.i++
			return
		default:
			r.bad = true
		}
	}
}

// rawString reads a string without escapes whose bytes are valid UTF-8
// and returns its bytes (inside b). ok is false for anything else (the
// reader is not failed: String tries the escapes).
func (r *Reader) rawString() ([]byte, bool) {
	if r.peek() != '"' {
		return nil, false
	}
	start := r.i + 1
	ascii := true
	for j := start; j < len(r.b); j++ {
		c := r.b[j]
		switch {
		case c == '"':
			s := r.b[start:j]
			if !ascii && !utf8.Valid(s) {
				return nil, false
			}
			r.i = j + 1
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// String reads a string. Escapes other than \uD800-\uDFFF (surrogates,
// which encoding/json pairs or replaces) are decoded; a string whose raw
// bytes are not valid UTF-8 is outside the subset.
func (r *Reader) String() string {
	if r.bad {
		return ""
	}
	if s, ok := r.rawString(); ok {
		return string(s)
	}
	if r.peek() != '"' {
		r.bad = true
		return ""
	}
	out := make([]byte, 0, 32)
	for j := r.i + 1; j < len(r.b); {
		c := r.b[j]
		switch {
		case c == '"':
			if !utf8.Valid(out) {
				break
			}
			r.i = j + 1
			return string(out)
		case c < 0x20:
		case c != '\\':
			out = append(out, c)
			j++
			continue
		case j+1 < len(r.b):
			j += 2
			switch r.b[j-1] {
			case '"', '\\', '/':
				out = append(out, r.b[j-1])
				continue
			case 'b':
				out = append(out, '\b')
				continue
			case 'f':
				out = append(out, '\f')
				continue
			case 'n':
				out = append(out, '\n')
				continue
			case 'r':
				out = append(out, '\r')
				continue
			case 't':
				out = append(out, '\t')
				continue
			case 'u':
				if j+4 > len(r.b) {
					break
				}
				v, err := strconv.ParseUint(string(r.b[j:j+4]), 16, 32)
				if err != nil || v >= 0xD800 && v <= 0xDFFF {
					break
				}
				out = utf8.AppendRune(out, rune(v))
				j += 4
				continue
			}
		}
		break
	}
	r.bad = true
	return ""
}

// number returns the bytes of a JSON number (RFC 8259's grammar) and
// whether it is an integer (no fraction or exponent).
func (r *Reader) number() (num []byte, integer bool) {
	r.ws()
	start, j := r.i, r.i
	if j < len(r.b) && r.b[j] == '-' {
		j++
	}
	switch {
	case j < len(r.b) && r.b[j] == '0':
		j++
	case j < len(r.b) && r.b[j] >= '1' && r.b[j] <= '9':
		for j < len(r.b) && r.b[j] >= '0' && r.b[j] <= '9' {
			j++
		}
	default:
		r.bad = true
		return nil, false
	}
	integer = true
	if j < len(r.b) && r.b[j] == '.' {
		integer = false
		j++
		if j >= len(r.b) || r.b[j] < '0' || r.b[j] > '9' {
			r.bad = true
			return nil, false
		}
		for j < len(r.b) && r.b[j] >= '0' && r.b[j] <= '9' {
			j++
		}
	}
	if j < len(r.b) && (r.b[j] == 'e' || r.b[j] == 'E') {
		integer = false
		j++
		if j < len(r.b) && (r.b[j] == '+' || r.b[j] == '-') {
			j++
		}
		if j >= len(r.b) || r.b[j] < '0' || r.b[j] > '9' {
			r.bad = true
			return nil, false
		}
		for j < len(r.b) && r.b[j] >= '0' && r.b[j] <= '9' {
			j++
		}
	}
	r.i = j
	return r.b[start:j], integer
}

// Uint reads an integer that fits bits bits, unsigned.
func (r *Reader) Uint(bits int) uint64 {
	if r.bad {
		return 0
	}
	// Small ids and counts, the common case, without strconv.
	if j := r.i; j < len(r.b) && r.b[j] >= '1' && r.b[j] <= '9' {
		var v uint64
		for ; j < len(r.b) && j-r.i < 9 && r.b[j] >= '0' && r.b[j] <= '9'; j++ {
			v = v*10 + uint64(r.b[j]-'0')
		}
		if j < len(r.b) && (r.b[j] == ',' || r.b[j] == ']' || r.b[j] == '}') && (bits >= 32 || v < 1<<bits) {
			r.i = j
			return v
		}
	}
	num, integer := r.number()
	if r.bad || !integer || num[0] == '-' {
		r.bad = true
		return 0
	}
	v, err := strconv.ParseUint(string(num), 10, bits)
	if err != nil {
		r.bad = true
		return 0
	}
	return v
}

// Int reads an integer that fits bits bits, signed.
func (r *Reader) Int(bits int) int64 {
	num, integer := r.number()
	if r.bad || !integer {
		r.bad = true
		return 0
	}
	v, err := strconv.ParseInt(string(num), 10, bits)
	if err != nil {
		r.bad = true
		return 0
	}
	return v
}

// Float reads a number as a float64 (finite).
func (r *Reader) Float() float64 {
	num, _ := r.number()
	if r.bad {
		return 0
	}
	v, err := strconv.ParseFloat(string(num), 64)
	if err != nil {
		r.bad = true
		return 0
	}
	return v
}

// Uint32s reads an array of uint32 into dst[:0] (a new slice when dst is
// nil; a non-nil empty one for []). Its loop is its own: a long prompt's
// ids are most of a request.
func (r *Reader) Uint32s(dst []uint32) []uint32 {
	if r.peek() != '[' {
		r.bad = true
		return nil
	}
	b := r.b
	if end := bytes.IndexByte(b[r.i:], ']'); end > 0 {
		if n := bytes.Count(b[r.i:r.i+end], comma) + 1; cap(dst) < n {
			dst = make([]uint32, 0, n) // one allocation
		}
	}
	if dst == nil {
		dst = []uint32{}
	}
	dst = dst[:0]
	i := r.i + 1
	i = skipSpace(b, i)
	if i < len(b) && b[i] == ']' {
		r.i = i + 1
		return dst
	}
	for {
		start := i
		var v uint64
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			v = v*10 + uint64(b[i]-'0')
			if v > 1<<32-1 {
				r.bad = true
				return nil
			}
			i++
		}
		if i == start || b[start] == '0' && i-start > 1 {
			r.bad = true // no digits, or a leading zero
			return nil
		}
		dst = append(dst, uint32(v))
		i = skipSpace(b, i)
		if i >= len(b) {
			r.bad = true
			return nil
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			r.i = i + 1
			return dst
		default:
			r.bad = true // a fraction, an exponent, a sign, or not JSON
			return nil
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

var comma = []byte{','}

// Strings reads an array of strings.
func (r *Reader) Strings() []string {
	out := []string{}
	r.Array(func() { out = append(out, r.String()) })
	if r.bad {
		return nil
	}
	return out
}

// The Opt readers follow encoding/json for a pointer field (null is nil,
// anything else the value read), the Into readers for a plain one (null
// leaves it as it is).

// opt reads null as nil, anything else with read.
func opt[T any](r *Reader, read func() T) *T {
	if r.Null() {
		return nil
	}
	v := read()
	return &v
}

// into reads null as nothing, anything else with read into dst.
func into[T any](r *Reader, dst *T, read func() T) {
	if !r.Null() {
		*dst = read()
	}
}

func (r *Reader) int() int       { return int(r.Int(strconv.IntSize)) }
func (r *Reader) int64() int64   { return r.Int(64) }
func (r *Reader) uint32() uint32 { return uint32(r.Uint(32)) }
func (r *Reader) uint64() uint64 { return r.Uint(64) }

// OptString reads a string or null.
func (r *Reader) OptString() *string { return opt(r, r.String) }

// OptBool reads a boolean or null.
func (r *Reader) OptBool() *bool { return opt(r, r.Bool) }

// OptInt reads an int or null.
func (r *Reader) OptInt() *int { return opt(r, r.int) }

// OptInt64 reads an int64 or null.
func (r *Reader) OptInt64() *int64 { return opt(r, r.int64) }

// OptUint32 reads a uint32 or null.
func (r *Reader) OptUint32() *uint32 { return opt(r, r.uint32) }

// OptUint64 reads a uint64 or null.
func (r *Reader) OptUint64() *uint64 { return opt(r, r.uint64) }

// OptFloat reads a float64 or null.
func (r *Reader) OptFloat() *float64 { return opt(r, r.Float) }

// StringInto reads a string into dst, or null.
func (r *Reader) StringInto(dst *string) { into(r, dst, r.String) }

// BoolInto reads a boolean into dst, or null.
func (r *Reader) BoolInto(dst *bool) { into(r, dst, r.Bool) }

// IntInto reads an int into dst, or null.
func (r *Reader) IntInto(dst *int) { into(r, dst, r.int) }

// Int64Into reads an int64 into dst, or null.
func (r *Reader) Int64Into(dst *int64) { into(r, dst, r.int64) }

// Uint64Into reads a uint64 into dst, or null.
func (r *Reader) Uint64Into(dst *uint64) { into(r, dst, r.uint64) }

// AppendString appends s as a JSON string exactly as encoding/json writes
// it: '"' and '\\' escaped, \b \f \n \r \t by name, other control bytes
// (and, with escapeHTML, '<', '>' and '&') as \u00XX, U+2028 and U+2029
// escaped, invalid UTF-8 as \ufffd.
func AppendString(b []byte, s string, escapeHTML bool) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!escapeHTML || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(b, s[start:]...), '"')
}
