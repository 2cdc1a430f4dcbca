package template

import (
	"fmt"
	"strconv"
	"strings"
)

type tokKind int

const (
	tText tokKind = iota
	tVarBegin
	tVarEnd
	tBlockBegin
	tBlockEnd
	tName
	tString
	tInt
	tFloat
	tOp
	tEOF
)

type token struct {
	kind tokKind
	val  string
	num  any
	line int
}

func (t token) String() string {
	switch t.kind {
	case tEOF:
		return "end of template"
	case tVarEnd:
		return "'}}'"
	case tBlockEnd:
		return "'%}'"
	}
	return strconv.Quote(t.val)
}

// lex splits src into tokens, applying trim_blocks, lstrip_blocks, "-"
// whitespace control and keep_trailing_newline=False, as transformers
// configures Jinja2.
func lex(src string) ([]token, error) {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	if strings.HasSuffix(src, "\n") {
		src = src[:len(src)-1]
	}
	var toks []token
	pos, line := 0, 1
	stripNext := false // "-" on the previous closing tag
	trimNL := false    // trim_blocks after the previous block/comment tag
	for pos < len(src) {
		// find next tag opener
		i := pos
		open := -1
		for {
			j := strings.IndexByte(src[i:], '{')
			if j < 0 || i+j+1 >= len(src) {
				break
			}
			c := src[i+j+1]
			if c == '{' || c == '%' || c == '#' {
				open = i + j
				break
			}
			i += j + 1
		}
		textEnd := len(src)
		if open >= 0 {
			textEnd = open
		}
		text := src[pos:textEnd]
		textStart := pos
		if trimNL && strings.HasPrefix(text, "\n") {
			text = text[1:]
			textStart++
		}
		if stripNext {
			text = strings.TrimLeft(text, " \t\n\r")
		}
		stripNext, trimNL = false, false
		if open >= 0 {
			kind := src[open+1]
			mod := byte(0)
			if open+2 < len(src) && (src[open+2] == '-' || src[open+2] == '+') {
				mod = src[open+2]
			}
			if mod == '-' {
				text = strings.TrimRight(text, " \t\n\r")
			} else if mod != '+' && kind != '{' {
				// lstrip_blocks (Jinja2 lexer: line_starting rule)
				l := strings.LastIndexByte(text, '\n') + 1
				lineStarting := textStart == 0 || src[textStart-1] == '\n'
				if (l > 0 || lineStarting) && strings.Trim(text[l:], " \t") == "" {
					text = text[:l]
				}
			}
		}
		if text != "" {
			toks = append(toks, token{kind: tText, val: text, line: line})
		}
		line += strings.Count(src[pos:textEnd], "\n")
		if open < 0 {
			break
		}
		kind := src[open+1]
		p := open + 2
		if p < len(src) && (src[p] == '-' || src[p] == '+') {
			p++
		}
		if kind == '#' {
			end := strings.Index(src[p:], "#}")
			if end < 0 {
				return nil, fmt.Errorf("line %d: unclosed comment", line)
			}
			body := src[p : p+end]
			line += strings.Count(body, "\n")
			if strings.HasSuffix(body, "-") {
				stripNext = true
			} else if !strings.HasSuffix(body, "+") {
				trimNL = true
			}
			pos = p + end + 2
			continue
		}
		if kind == '%' {
			// raw block
			q := p
			for q < len(src) && (src[q] == ' ' || src[q] == '\t' || src[q] == '\n') {
				q++
			}
			if strings.HasPrefix(src[q:], "raw") {
				r := q + 3
				for r < len(src) && (src[r] == ' ' || src[r] == '\t' || src[r] == '\n') {
					r++
				}
				if strings.HasPrefix(src[r:], "-%}") || strings.HasPrefix(src[r:], "%}") {
					bodyStart := r + strings.Index(src[r:], "%}") + 2
					rawStrip := src[r] == '-'
					endIdx := strings.Index(src[bodyStart:], "endraw")
					if endIdx < 0 {
						return nil, fmt.Errorf("line %d: unclosed raw block", line)
					}
					tagOpen := strings.LastIndex(src[bodyStart:bodyStart+endIdx], "{%")
					body := src[bodyStart : bodyStart+tagOpen]
					if rawStrip {
						body = strings.TrimLeft(body, " \t\n\r")
					} else if strings.HasPrefix(body, "\n") {
						body = body[1:]
					}
					if strings.HasPrefix(src[bodyStart+tagOpen:], "{%-") {
						body = strings.TrimRight(body, " \t\n\r")
					}
					if body != "" {
						toks = append(toks, token{kind: tText, val: body, line: line})
					}
					closeIdx := strings.Index(src[bodyStart+endIdx:], "%}")
					if closeIdx < 0 {
						return nil, fmt.Errorf("line %d: unclosed raw block", line)
					}
					endPos := bodyStart + endIdx + closeIdx
					line += strings.Count(src[open:endPos], "\n")
					if src[endPos-1] == '-' {
						stripNext = true
					} else {
						trimNL = true
					}
					pos = endPos + 2
					continue
				}
			}
		}
		begin, endKind, closer := tVarBegin, tVarEnd, "}}"
		if kind == '%' {
			begin, endKind, closer = tBlockBegin, tBlockEnd, "%}"
		}
		toks = append(toks, token{kind: begin, line: line})
		np, nl, closeMod, err := lexExpr(src, p, line, closer, &toks)
		if err != nil {
			return nil, err
		}
		toks = append(toks, token{kind: endKind, line: nl})
		line = nl
		pos = np
		if closeMod == '-' {
			stripNext = true
		} else if kind == '%' && closeMod != '+' {
			trimNL = true
		}
	}
	toks = append(toks, token{kind: tEOF, line: line})
	return toks, nil
}

var ops3 = []string{"//", "**", "==", "!=", "<=", ">="}

// lexExpr lexes expression tokens from p until closer; returns the position
// after the closer and the closing modifier ('-', '+' or 0).
func lexExpr(src string, p, line int, closer string, toks *[]token) (int, int, byte, error) {
	depth := 0
	for {
		for p < len(src) && (src[p] == ' ' || src[p] == '\t' || src[p] == '\n' || src[p] == '\r') {
			if src[p] == '\n' {
				line++
			}
			p++
		}
		if p >= len(src) {
			return 0, line, 0, fmt.Errorf("line %d: unexpected end of template, expected %q", line, closer)
		}
		if depth == 0 {
			if strings.HasPrefix(src[p:], closer) {
				return p + 2, line, 0, nil
			}
			if (src[p] == '-' || src[p] == '+') && strings.HasPrefix(src[p+1:], closer) {
				return p + 3, line, src[p], nil
			}
		}
		c := src[p]
		switch {
		case c == '"' || c == '\'':
			s, n, err := lexString(src[p:])
			if err != nil {
				return 0, line, 0, fmt.Errorf("line %d: %w", line, err)
			}
			line += strings.Count(src[p:p+n], "\n")
			*toks = append(*toks, token{kind: tString, val: s, line: line})
			p += n
		case c >= '0' && c <= '9':
			q := p
			isFloat := false
			for q < len(src) && (src[q] >= '0' && src[q] <= '9' || src[q] == '_') {
				q++
			}
			if q+1 < len(src) && src[q] == '.' && src[q+1] >= '0' && src[q+1] <= '9' {
				isFloat = true
				q++
				for q < len(src) && (src[q] >= '0' && src[q] <= '9' || src[q] == '_') {
					q++
				}
			}
			if q < len(src) && (src[q] == 'e' || src[q] == 'E') {
				r := q + 1
				if r < len(src) && (src[r] == '+' || src[r] == '-') {
					r++
				}
				if r < len(src) && src[r] >= '0' && src[r] <= '9' {
					isFloat = true
					q = r
					for q < len(src) && src[q] >= '0' && src[q] <= '9' {
						q++
					}
				}
			}
			lit := strings.ReplaceAll(src[p:q], "_", "")
			if isFloat {
				f, _ := strconv.ParseFloat(lit, 64)
				*toks = append(*toks, token{kind: tFloat, val: lit, num: f, line: line})
			} else {
				n, _ := strconv.ParseInt(lit, 10, 64)
				*toks = append(*toks, token{kind: tInt, val: lit, num: n, line: line})
			}
			p = q
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			q := p
			for q < len(src) && (src[q] == '_' || src[q] >= 'a' && src[q] <= 'z' || src[q] >= 'A' && src[q] <= 'Z' || src[q] >= '0' && src[q] <= '9') {
				q++
			}
			*toks = append(*toks, token{kind: tName, val: src[p:q], line: line})
			p = q
		default:
			op := ""
			for _, o := range ops3 {
				if strings.HasPrefix(src[p:], o) {
					op = o
					break
				}
			}
			if op == "" {
				if !strings.ContainsRune("+-*/%~<>=()[]{},.:|!", rune(c)) {
					return 0, line, 0, fmt.Errorf("line %d: unexpected character %q", line, c)
				}
				op = string(c)
			}
			switch op {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				depth--
			}
			*toks = append(*toks, token{kind: tOp, val: op, line: line})
			p += len(op)
		}
	}
}

func lexString(s string) (string, int, error) {
	q := s[0]
	var sb strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		if c == q {
			return sb.String(), i + 1, nil
		}
		if c == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 'n':
				sb.WriteByte('\n')
			case 't':
				sb.WriteByte('\t')
			case 'r':
				sb.WriteByte('\r')
			case 'b':
				sb.WriteByte('\b')
			case 'f':
				sb.WriteByte('\f')
			case '0':
				sb.WriteByte(0)
			case '\\', '\'', '"':
				sb.WriteByte(s[i])
			case '\n':
			case 'u', 'x', 'U':
				n := map[byte]int{'u': 4, 'x': 2, 'U': 8}[s[i]]
				if i+n < len(s) {
					if r, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32); err == nil {
						sb.WriteRune(rune(r))
						i += n
						continue
					}
				}
				sb.WriteByte('\\')
				sb.WriteByte(s[i])
			default:
				sb.WriteByte('\\')
				sb.WriteByte(s[i])
			}
			continue
		}
		sb.WriteByte(c)
	}
	return "", 0, fmt.Errorf("unterminated string")
}
