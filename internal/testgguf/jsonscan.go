package testgguf

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner is a minimal JSON reader for the two large parts of a
// tokenizer.json, model.vocab and model.merges (about 300,000 strings in
// Qwen3's), which encoding/json decodes several times slower. Everything
// else is skipped here and handed to encoding/json as raw bytes.
type scanner struct {
	b []byte
	i int
}

var errJSON = errors.New("testgguf: malformed JSON")

func (s *scanner) fail(what string) error {
	return fmt.Errorf("%w: %s at byte %d", errJSON, what, s.i)
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		return s.fail(fmt.Sprintf("want %q", c))
	}
	s.i++
	return nil
}

// object calls f for each key; f must consume the value.
func (s *scanner) object(f func(key string) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		k, err := s.str()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := f(k); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.fail("want , or }")
		}
	}
}

// array calls f for each element; f must consume it.
func (s *scanner) array(f func() error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for {
		if err := f(); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.fail("want , or ]")
		}
	}
}

// str reads a string, decoding escapes.
func (s *scanner) str() (string, error) {
	b, err := s.strBytes()
	return string(b), err
}

// strBytes reads a string, decoding escapes; without escapes the bytes
// are a view into the input.
func (s *scanner) strBytes() ([]byte, error) {
	if err := s.expect('"'); err != nil {
		return nil, err
	}
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			v := s.b[start:s.i:s.i]
			s.i++
			return v, nil
		case c == '\\':
			return s.escaped(start)
		case c < 0x20:
			return nil, s.fail("control character in string")
		default:
			s.i++
		}
	}
	return nil, s.fail("unterminated string")
}

// escaped finishes a string that has escapes, from its start.
func (s *scanner) escaped(start int) ([]byte, error) {
	out := append([]byte(nil), s.b[start:s.i]...)
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return out, nil
		case c < 0x20:
			return nil, s.fail("control character in string")
		case c != '\\':
			out = append(out, c)
			s.i++
			continue
		}
		if s.i+1 >= len(s.b) {
			break
		}
		e := s.b[s.i+1]
		s.i += 2
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
			r, ok := s.hex4()
			if !ok {
				return nil, s.fail("bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				r2 := utf8.RuneError
				if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
					save := s.i
					s.i += 2
					if lo, ok := s.hex4(); ok {
						if d := utf16.DecodeRune(r, lo); d != utf8.RuneError {
							r2 = d
						} else {
							s.i = save
						}
					} else {
						s.i = save
					}
				}
				r = r2
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, s.fail("bad escape")
		}
	}
	return nil, s.fail("unterminated string")
}

func (s *scanner) hex4() (rune, bool) {
	if s.i+4 > len(s.b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(s.b[s.i:s.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	s.i += 4
	return rune(v), true
}

// int reads a non-negative integer.
func (s *scanner) int() (int, error) {
	s.ws()
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	n, err := strconv.Atoi(string(s.b[start:s.i]))
	if err != nil {
		return 0, s.fail("want a non-negative integer")
	}
	return n, nil
}

// skip consumes any value and returns its bytes.
func (s *scanner) skip() ([]byte, error) {
	s.ws()
	start := s.i
	var err error
	switch s.peek() {
	case '{':
		err = s.object(func(string) error { _, err := s.skip(); return err })
	case '[':
		err = s.array(func() error { _, err := s.skip(); return err })
	case '"':
		_, err = s.str()
	case 0:
		err = s.fail("unexpected end")
	default: // number, true, false, null
		for s.i < len(s.b) {
			c := s.b[s.i]
			if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				break
			}
			s.i++
		}
		if s.i == start {
			err = s.fail("want a value")
		}
	}
	return s.b[start:s.i], err
}
