package toolcall

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// parsePythonCalls reads "[f(a=1), g()]" (or the same calls without the
// brackets) and converts each call's keyword arguments to a JSON object.
func parsePythonCalls(s string) ([]Call, bool) {
	p := &pyParser{s: strings.TrimSpace(s)}
	bracketed := p.eat('[')
	var calls []Call
	for {
		p.space()
		if bracketed && p.eat(']') || !bracketed && p.done() {
			break
		}
		if len(calls) > 0 {
			if !p.eat(',') {
				return nil, false
			}
			p.space()
			if bracketed && p.eat(']') { // a trailing comma
				break
			}
		}
		c, ok := p.call()
		if !ok {
			return nil, false
		}
		calls = append(calls, c)
	}
	p.space()
	return calls, p.done() && len(calls) > 0
}

// pyParser is a small recursive-descent reader of Python call syntax.
type pyParser struct {
	s string
	i int
}

func (p *pyParser) done() bool { return p.i >= len(p.s) }

func (p *pyParser) space() { p.i = skipSpace(p.s, p.i) }

func (p *pyParser) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *pyParser) ident() string {
	start := p.i
	if p.i < len(p.s) && isIdentStart(p.s[p.i]) {
		for p.i < len(p.s) && isIdentByte(p.s[p.i]) {
			p.i++
		}
	}
	return p.s[start:p.i]
}

// call reads name(key=value, ...).
func (p *pyParser) call() (Call, bool) {
	name := p.ident()
	p.space()
	if name == "" || !p.eat('(') {
		return Call{}, false
	}
	var b strings.Builder
	b.WriteByte('{')
	for n := 0; ; n++ {
		p.space()
		if p.eat(')') {
			break
		}
		if n > 0 {
			if !p.eat(',') {
				return Call{}, false
			}
			p.space()
			if p.eat(')') {
				break
			}
			b.WriteByte(',')
		}
		key := p.ident()
		p.space()
		if key == "" || !p.eat('=') { // positional arguments have no name to go under
			return Call{}, false
		}
		p.space()
		b.WriteString(jsonString(key))
		b.WriteByte(':')
		if !p.value(&b) {
			return Call{}, false
		}
	}
	b.WriteByte('}')
	return Call{Name: name, Arguments: b.String()}, true
}

// value reads one Python literal and writes it to b as JSON.
func (p *pyParser) value(b *strings.Builder) bool {
	if p.done() {
		return false
	}
	switch c := p.s[p.i]; {
	case c == '"' || c == '\'':
		s, ok := p.str()
		b.WriteString(jsonString(s))
		return ok
	case c == '[' || c == '(':
		p.i++
		return p.sequence(b, map[byte]byte{'[': ']', '(': ')'}[c])
	case c == '{':
		p.i++
		return p.dict(b)
	case c == '-' || c == '+' || c == '.' || '0' <= c && c <= '9':
		return p.number(b)
	}
	switch p.ident() {
	case "True":
		b.WriteString("true")
	case "False":
		b.WriteString("false")
	case "None":
		b.WriteString("null")
	default:
		return false
	}
	return true
}

func (p *pyParser) sequence(b *strings.Builder, close byte) bool {
	b.WriteByte('[')
	for n := 0; ; n++ {
		p.space()
		if p.eat(close) {
			break
		}
		if n > 0 {
			if !p.eat(',') {
				return false
			}
			p.space()
			if p.eat(close) {
				break
			}
			b.WriteByte(',')
		}
		if !p.value(b) {
			return false
		}
	}
	b.WriteByte(']')
	return true
}

func (p *pyParser) dict(b *strings.Builder) bool {
	b.WriteByte('{')
	for n := 0; ; n++ {
		p.space()
		if p.eat('}') {
			break
		}
		if n > 0 {
			if !p.eat(',') {
				return false
			}
			p.space()
			if p.eat('}') {
				break
			}
			b.WriteByte(',')
		}
		if p.done() || p.s[p.i] != '"' && p.s[p.i] != '\'' { // JSON keys are strings
			return false
		}
		key, ok := p.str()
		p.space()
		if !ok || !p.eat(':') {
			return false
		}
		p.space()
		b.WriteString(jsonString(key))
		b.WriteByte(':')
		if !p.value(b) {
			return false
		}
	}
	b.WriteByte('}')
	return true
}

// str reads a quoted string literal, decoding Python's escapes.
func (p *pyParser) str() (string, bool) {
	q := p.s[p.i]
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == q:
			p.i++
			return b.String(), true
		case c != '\\':
			b.WriteByte(c)
			p.i++
			continue
		}
		if p.i+1 >= len(p.s) {
			return "", false
		}
		e := p.s[p.i+1]
		p.i += 2
		switch e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case '0':
			b.WriteByte(0)
		case '\\', '\'', '"':
			b.WriteByte(e)
		case '\n': // a line continuation
		case 'x', 'u', 'U':
			width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if p.i+width > len(p.s) {
				return "", false
			}
			r, err := strconv.ParseUint(p.s[p.i:p.i+width], 16, 32)
			if err != nil || !utf8.ValidRune(rune(r)) {
				return "", false
			}
			b.WriteRune(rune(r))
			p.i += width
		default: // Python keeps unknown escapes as written
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return "", false
}

// number reads a decimal int or float and writes it as a JSON number.
func (p *pyParser) number(b *strings.Builder) bool {
	start := p.i
	for p.i < len(p.s) && strings.IndexByte("+-.0123456789eE_", p.s[p.i]) >= 0 {
		p.i++
	}
	n := strings.ReplaceAll(p.s[start:p.i], "_", "")
	n = strings.TrimPrefix(n, "+")
	neg := strings.HasPrefix(n, "-")
	n = strings.TrimPrefix(n, "-")
	if strings.HasPrefix(n, ".") {
		n = "0" + n
	}
	n = strings.Replace(n, ".e", ".0e", 1)
	n = strings.Replace(n, ".E", ".0E", 1)
	n = strings.TrimSuffix(n, ".")
	if neg {
		n = "-" + n
	}
	if !json.Valid([]byte(n)) {
		return false
	}
	b.WriteString(n)
	return true
}

func isIdentStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isIdentByte(c byte) bool { return isIdentStart(c) || c == '.' || '0' <= c && c <= '9' }
