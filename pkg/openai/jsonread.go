package openai

import (
	"bytes"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonText reads a document that validJSON accepted and that is valid
// UTF-8; on such input it reads what encoding/json reads. It does not
// check the grammar again, but what it does not expect ends the read with
// errDecline rather than a panic.
type jsonText struct {
	b []byte
	i int
}

// peek skips whitespace and returns the next byte, 0 at the end.
func (t *jsonText) peek() byte {
	t.i = skipSpace(t.b, t.i)
	if t.i >= len(t.b) {
		return 0
	}
	return t.b[t.i]
}

// object reads the object at the current position, calling fn with each
// key (unescaped; valid only during the call) to read its value.
func (t *jsonText) object(fn func(key []byte) error) error {
	if t.peek() != '{' {
		return errDecline
	}
	t.i++
	if t.peek() == '}' {
		t.i++
		return nil
	}
	for {
		if t.peek() != '"' {
			return errDecline
		}
		key, err := t.key()
		if err != nil {
			return err
		}
		if t.peek() != ':' {
			return errDecline
		}
		t.i++
		if err := fn(key); err != nil {
			return err
		}
		if more, err := t.more('}'); !more || err != nil {
			return err
		}
	}
}

// array reads the array at the current position, calling fn to read each
// element.
func (t *jsonText) array(fn func() error) error {
	if t.peek() != '[' {
		return errDecline
	}
	t.i++
	if t.peek() == ']' {
		t.i++
		return nil
	}
	for {
		if err := fn(); err != nil {
			return err
		}
		if more, err := t.more(']'); !more || err != nil {
			return err
		}
	}
}

// more consumes the comma or the closing bracket after a member and
// reports whether another member follows.
func (t *jsonText) more(closing byte) (bool, error) {
	switch t.peek() {
	case ',':
		t.i++
		return true, nil
	case closing:
		t.i++
		return false, nil
	}
	return false, errDecline
}

// null consumes a null and reports whether there was one.
func (t *jsonText) null() bool {
	if t.peek() == 'n' && len(t.b)-t.i >= 4 && string(t.b[t.i:t.i+4]) == "null" {
		t.i += 4
		return true
	}
	return false
}

// rawString consumes the string at the current position and returns the
// bytes between its quotes.
func (t *jsonText) rawString() ([]byte, error) {
	if t.peek() != '"' {
		return nil, errDecline
	}
	start := t.i + 1
	end := stringEnd(t.b, start)
	if end < 0 {
		return nil, errDecline
	}
	t.i = end + 1
	return t.b[start:end], nil
}

// key reads a string as bytes, aliasing the input unless it has escapes.
func (t *jsonText) key() ([]byte, error) {
	raw, err := t.rawString()
	if err != nil || bytes.IndexByte(raw, '\\') < 0 {
		return raw, err
	}
	s, err := unquote(raw)
	return []byte(s), err
}

// str reads a string.
func (t *jsonText) str() (string, error) {
	raw, err := t.rawString()
	if err != nil {
		return "", err
	}
	return unquote(raw)
}

// skip consumes one value and returns its bytes.
func (t *jsonText) skip() ([]byte, error) {
	t.peek()
	start, depth := t.i, 0
	for t.i < len(t.b) {
		switch t.b[t.i] {
		case '"':
			end := stringEnd(t.b, t.i+1)
			if end < 0 {
				return nil, errDecline
			}
			t.i = end + 1
		case '{', '[':
			depth++
			t.i++
		case '}', ']':
			if depth--; depth < 0 {
				return nil, errDecline
			}
			t.i++
		default:
			t.i++
			if depth == 0 { // a number or literal: up to a delimiter
				for t.i < len(t.b) && !endsScalar(t.b[t.i]) {
					t.i++
				}
			}
		}
		if depth == 0 {
			return t.b[start:t.i], nil
		}
	}
	return nil, errDecline
}

// endsScalar reports whether c is a byte that cannot be part of a number
// or literal but may follow one.
func endsScalar(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

// stringEnd returns the offset of the quote that closes the string whose
// contents start at b[i], or -1. A quote is escaped when an odd run of
// backslashes precedes it.
func stringEnd(b []byte, i int) int {
	start := i
	for {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return -1
		}
		q += i
		n := 0
		for q-n > start && b[q-n-1] == '\\' {
			n++
		}
		if n%2 == 0 {
			return q
		}
		i = q + 1
	}
}

// unquote unescapes the contents of a valid JSON string as encoding/json
// does (a lone or unpaired surrogate becomes U+FFFD), copying the runs
// between escapes whole.
func unquote(s []byte) (string, error) {
	i := bytes.IndexByte(s, '\\')
	if i < 0 {
		return string(s), nil
	}
	var out strings.Builder
	out.Grow(len(s)) // unescaping only shrinks
	out.Write(s[:i])
	for i < len(s) { // s[i] is a backslash
		if i+1 >= len(s) {
			return "", errDecline
		}
		c := s[i+1]
		i += 2
		switch c {
		case '"', '\\', '/':
			out.WriteByte(c)
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'u':
			r := hex4(s, i)
			if r < 0 {
				return "", errDecline
			}
			i += 4
			if utf16.IsSurrogate(r) {
				// Paired with a following \u escape, or U+FFFD.
				if len(s)-i >= 6 && s[i] == '\\' && s[i+1] == 'u' {
					if d := utf16.DecodeRune(r, hex4(s, i+2)); d != utf8.RuneError {
						out.WriteRune(d)
						i += 6
						break
					}
				}
				r = utf8.RuneError
			}
			out.WriteRune(r)
		default:
			return "", errDecline
		}
		j := bytes.IndexByte(s[i:], '\\')
		if j < 0 {
			j = len(s) - i
		}
		out.Write(s[i : i+j])
		i += j
	}
	return out.String(), nil
}

// hex4 returns the value of the four hex digits at s[i:], or -1.
func hex4(s []byte, i int) rune {
	if len(s)-i < 4 {
		return -1
	}
	var r rune
	for _, c := range s[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}
