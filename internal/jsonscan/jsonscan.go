// Package jsonscan is a minimal, allocation-lean JSON reader used to load the
// large "vocab" and "merges" sections of tokenizer.json quickly. Small
// sections are left to encoding/json.
package jsonscan

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Reader reads JSON values from a byte slice.
type Reader struct {
	b []byte
	i int
}

// New returns a Reader over b.
func New(b []byte) *Reader { return &Reader{b: b} }

// Pos returns the current byte offset.
func (r *Reader) Pos() int { return r.i }

func (r *Reader) errf(format string, args ...any) error {
	return fmt.Errorf("tokenizer: json at offset %d: %s", r.i, fmt.Sprintf(format, args...))
}

// SkipWS skips insignificant whitespace.
func (r *Reader) SkipWS() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// Peek returns the next non-space byte (0 at end).
func (r *Reader) Peek() byte {
	r.SkipWS()
	if r.i >= len(r.b) {
		return 0
	}
	return r.b[r.i]
}

// Expect consumes byte c (after whitespace).
func (r *Reader) Expect(c byte) error {
	if r.Peek() != c {
		return r.errf("expected %q", c)
	}
	r.i++
	return nil
}

// Null consumes a null literal if present and reports whether it did.
func (r *Reader) Null() bool {
	if r.Peek() == 'n' && r.i+4 <= len(r.b) && string(r.b[r.i:r.i+4]) == "null" {
		r.i += 4
		return true
	}
	return false
}

// More reports whether another element follows in an object or array whose
// opening bracket was consumed, consuming the separating comma; it consumes
// the closing bracket and returns false at the end. first is true for the
// first call.
func (r *Reader) More(first bool, closing byte) (bool, error) {
	c := r.Peek()
	if c == closing {
		r.i++
		return false, nil
	}
	if !first {
		if c != ',' {
			return false, r.errf("expected ',' or %q", closing)
		}
		r.i++
	}
	return true, nil
}

// String reads a JSON string and returns its unescaped value. The input is
// expected to be valid UTF-8 (the tokenizer checks the whole file first);
// bytes outside escapes are passed through unchanged.
func (r *Reader) String() (string, error) {
	if r.Peek() != '"' {
		return "", r.errf("expected string")
	}
	r.i++
	start := r.i
	for r.i < len(r.b) {
		c := r.b[r.i]
		if c == '"' {
			s := string(r.b[start:r.i])
			r.i++
			return s, nil
		}
		if c == '\\' {
			return r.slowString(start)
		}
		r.i++
	}
	return "", r.errf("unterminated string")
}

func (r *Reader) slowString(start int) (string, error) {
	out := append([]byte(nil), r.b[start:r.i]...)
	for r.i < len(r.b) {
		c := r.b[r.i]
		switch {
		case c == '"':
			r.i++
			return string(out), nil
		case c != '\\':
			out = append(out, c)
			r.i++
			continue
		}
		if r.i+1 >= len(r.b) {
			break
		}
		e := r.b[r.i+1]
		r.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			ch, err := r.hex4()
			if err != nil {
				return "", err
			}
			if utf16.IsSurrogate(ch) {
				// A low surrogate must follow; otherwise U+FFFD as encoding/json does.
				if r.i+6 <= len(r.b) && r.b[r.i] == '\\' && r.b[r.i+1] == 'u' {
					save := r.i
					r.i += 2
					lo, err := r.hex4()
					if err == nil {
						if d := utf16.DecodeRune(ch, lo); d != utf8.RuneError {
							out = utf8.AppendRune(out, d)
							continue
						}
					}
					r.i = save
				}
				ch = utf8.RuneError
			}
			out = utf8.AppendRune(out, ch)
		default:
			return "", r.errf("bad escape")
		}
	}
	return "", r.errf("unterminated string")
}

func (r *Reader) hex4() (rune, error) {
	if r.i+4 > len(r.b) {
		return 0, r.errf("short \\u escape")
	}
	v, err := strconv.ParseUint(string(r.b[r.i:r.i+4]), 16, 32)
	if err != nil {
		return 0, r.errf("bad \\u escape")
	}
	r.i += 4
	return rune(v), nil
}

// Uint reads a non-negative JSON integer.
func (r *Reader) Uint() (uint64, error) {
	r.SkipWS()
	start := r.i
	var v uint64
	for r.i < len(r.b) && r.b[r.i] >= '0' && r.b[r.i] <= '9' {
		v = v*10 + uint64(r.b[r.i]-'0')
		r.i++
	}
	if r.i == start || r.i-start > 19 {
		return 0, r.errf("expected unsigned integer")
	}
	if r.i < len(r.b) && (r.b[r.i] == '.' || r.b[r.i] == 'e' || r.b[r.i] == 'E') {
		r.i = start
		f, err := r.Number()
		if err != nil || f < 0 || f != float64(uint64(f)) {
			return 0, r.errf("expected unsigned integer")
		}
		return uint64(f), nil
	}
	return v, nil
}

// Skip skips one JSON value and returns its raw bytes.
func (r *Reader) Skip() ([]byte, error) {
	r.SkipWS()
	start := r.i
	depth := 0
	for r.i < len(r.b) {
		c := r.b[r.i]
		switch c {
		case '"':
			end := stringEnd(r.b, r.i+1)
			if end < 0 {
				r.i = len(r.b)
				return nil, r.errf("unterminated string")
			}
			r.i = end + 1
		case '{', '[':
			depth++
			r.i++
		case '}', ']':
			depth--
			r.i++
		default:
			r.i++
			if depth == 0 {
				// scalar: consume until a delimiter
				for r.i < len(r.b) {
					d := r.b[r.i]
					if d == ',' || d == '}' || d == ']' || d == ' ' || d == '\n' || d == '\r' || d == '\t' {
						break
					}
					r.i++
				}
				return r.b[start:r.i], nil
			}
		}
		if depth == 0 {
			return r.b[start:r.i], nil
		}
		if depth < 0 {
			return nil, r.errf("unbalanced brackets")
		}
	}
	return nil, errors.New("tokenizer: json: unexpected end of input")
}

// stringEnd returns the index of the quote that ends the string whose
// contents start at b[i], or -1. It jumps from quote to quote
// (bytes.IndexByte): a quote preceded by an odd run of backslashes is
// escaped.
func stringEnd(b []byte, i int) int {
	for {
		k := bytes.IndexByte(b[i:], '"')
		if k < 0 {
			return -1
		}
		q := i + k
		n := 0
		for j := q - 1; j >= i && b[j] == '\\'; j-- {
			n++
		}
		if n%2 == 0 {
			return q
		}
		i = q + 1
	}
}

// Object iterates over the members of an object, calling fn with each key;
// fn must consume the value.
func (r *Reader) Object(fn func(key string) error) error {
	if err := r.Expect('{'); err != nil {
		return err
	}
	for first := true; ; first = false {
		more, err := r.More(first, '}')
		if err != nil || !more {
			return err
		}
		k, err := r.String()
		if err != nil {
			return err
		}
		if err := r.Expect(':'); err != nil {
			return err
		}
		if err := fn(k); err != nil {
			return err
		}
	}
}

// Array iterates over the elements of an array; fn must consume each one.
func (r *Reader) Array(fn func(i int) error) error {
	if err := r.Expect('['); err != nil {
		return err
	}
	for i := 0; ; i++ {
		more, err := r.More(i == 0, ']')
		if err != nil || !more {
			return err
		}
		if err := fn(i); err != nil {
			return err
		}
	}
}

// RawString reads a JSON string and returns its unescaped bytes; when the
// string has no escapes the result aliases the input (do not modify it).
func (r *Reader) RawString() ([]byte, error) {
	if r.Peek() != '"' {
		return nil, r.errf("expected string")
	}
	start := r.i + 1
	for j := start; j < len(r.b); j++ {
		switch r.b[j] {
		case '"':
			r.i = j + 1
			return r.b[start:j], nil
		case '\\':
			s, err := r.String()
			return []byte(s), err
		}
	}
	return nil, r.errf("unterminated string")
}

// ObjectRaw is Object with keys as RawString bytes (valid only during fn).
func (r *Reader) ObjectRaw(fn func(key []byte) error) error {
	if err := r.Expect('{'); err != nil {
		return err
	}
	for first := true; ; first = false {
		more, err := r.More(first, '}')
		if err != nil || !more {
			return err
		}
		k, err := r.RawString()
		if err != nil {
			return err
		}
		if err := r.Expect(':'); err != nil {
			return err
		}
		if err := fn(k); err != nil {
			return err
		}
	}
}

// CountMembers returns the number of members of the object starting at the
// current position (a sizing hint; the position is unchanged).
func (r *Reader) CountMembers() int {
	save := r.i
	defer func() { r.i = save }()
	if r.Peek() != '{' {
		return 0
	}
	n, depth := 0, 0
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case '"':
			r.i++
			for r.i < len(r.b) && r.b[r.i] != '"' {
				if r.b[r.i] == '\\' {
					r.i++
				}
				r.i++
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return n
			}
		case ':':
			if depth == 1 {
				n++
			}
		}
		r.i++
	}
	return n
}
