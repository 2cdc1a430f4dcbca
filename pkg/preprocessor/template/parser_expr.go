package template

import (
	"fmt"
)

// parseTuple parses "a, b" as a tuple (used by set and parentheses).
func (p *parser) parseTuple() (expr, error) {
	e, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if !p.isOp(",") {
		return e, nil
	}
	items := []expr{e}
	for p.isOp(",") {
		p.pos++
		if p.peek().kind == tBlockEnd || p.isOp(")") {
			break
		}
		e, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		items = append(items, e)
	}
	return &listExpr{items: items, tuple: true}, nil
}

func (p *parser) parseExpr() (expr, error) {
	e, err := p.parseOr(false)
	if err != nil {
		return nil, err
	}
	if p.isName("if") {
		p.pos++
		cond, err := p.parseOr(false)
		if err != nil {
			return nil, err
		}
		var no expr
		if p.isName("else") {
			p.pos++
			if no, err = p.parseExpr(); err != nil {
				return nil, err
			}
		}
		return &condExpr{cond, e, no}, nil
	}
	return e, nil
}

// parseOr; noCond is kept for symmetry with Jinja2's with_condexpr.
func (p *parser) parseOr(noCond bool) (expr, error) {
	l, err := p.parseAnd()
	if err != nil {
		return nil, err
	}
	for p.isName("or") {
		p.pos++
		r, err := p.parseAnd()
		if err != nil {
			return nil, err
		}
		l = &binExpr{"or", l, r}
	}
	return l, nil
}

func (p *parser) parseAnd() (expr, error) {
	l, err := p.parseNot()
	if err != nil {
		return nil, err
	}
	for p.isName("and") {
		p.pos++
		r, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		l = &binExpr{"and", l, r}
	}
	return l, nil
}

func (p *parser) parseNot() (expr, error) {
	if p.isName("not") {
		p.pos++
		x, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		return &unaryExpr{"not", x}, nil
	}
	return p.parseCompare()
}

func (p *parser) parseCompare() (expr, error) {
	l, err := p.parseMath1()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		var op string
		switch {
		case t.kind == tOp && (t.val == "==" || t.val == "!=" || t.val == "<" || t.val == ">" || t.val == "<=" || t.val == ">="):
			op = t.val
			p.pos++
		case t.kind == tName && t.val == "in":
			op = "in"
			p.pos++
		case t.kind == tName && t.val == "not" && p.toks[p.pos+1].kind == tName && p.toks[p.pos+1].val == "in":
			op = "not in"
			p.pos += 2
		default:
			return l, nil
		}
		r, err := p.parseMath1()
		if err != nil {
			return nil, err
		}
		l = &binExpr{op, l, r}
	}
}

func (p *parser) parseMath1() (expr, error) {
	l, err := p.parseConcat()
	if err != nil {
		return nil, err
	}
	for p.isOp("+") || p.isOp("-") {
		op := p.next().val
		r, err := p.parseConcat()
		if err != nil {
			return nil, err
		}
		l = &binExpr{op, l, r}
	}
	return l, nil
}

func (p *parser) parseConcat() (expr, error) {
	l, err := p.parseMath2()
	if err != nil {
		return nil, err
	}
	for p.isOp("~") {
		p.pos++
		r, err := p.parseMath2()
		if err != nil {
			return nil, err
		}
		l = &binExpr{"~", l, r}
	}
	return l, nil
}

func (p *parser) parseMath2() (expr, error) {
	l, err := p.parsePow()
	if err != nil {
		return nil, err
	}
	for p.isOp("*") || p.isOp("/") || p.isOp("//") || p.isOp("%") {
		op := p.next().val
		r, err := p.parsePow()
		if err != nil {
			return nil, err
		}
		l = &binExpr{op, l, r}
	}
	return l, nil
}

func (p *parser) parsePow() (expr, error) {
	l, err := p.parseUnary(true)
	if err != nil {
		return nil, err
	}
	for p.isOp("**") {
		p.pos++
		r, err := p.parseUnary(true)
		if err != nil {
			return nil, err
		}
		l = &binExpr{"**", l, r}
	}
	return l, nil
}

func (p *parser) parseUnary(withFilter bool) (expr, error) {
	var e expr
	var err error
	if p.isOp("-") || p.isOp("+") {
		op := p.next().val
		x, err := p.parseUnary(false)
		if err != nil {
			return nil, err
		}
		e = &unaryExpr{op, x}
	} else {
		if e, err = p.parsePrimary(); err != nil {
			return nil, err
		}
	}
	if e, err = p.parsePostfix(e); err != nil {
		return nil, err
	}
	if withFilter {
		return p.parseFilterExpr(e)
	}
	return e, nil
}

func (p *parser) parsePrimary() (expr, error) {
	t := p.next()
	switch t.kind {
	case tName:
		switch t.val {
		case "true", "True":
			return &constExpr{true}, nil
		case "false", "False":
			return &constExpr{false}, nil
		case "none", "None":
			return &constExpr{nil}, nil
		}
		return &nameExpr{t.val}, nil
	case tString:
		s := t.val
		for p.peek().kind == tString {
			s += p.next().val
		}
		return &constExpr{s}, nil
	case tInt, tFloat:
		return &constExpr{t.num}, nil
	case tOp:
		switch t.val {
		case "(":
			if p.isOp(")") {
				p.pos++
				return &listExpr{tuple: true}, nil
			}
			e, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			if p.isOp(",") {
				items := []expr{e}
				for p.isOp(",") {
					p.pos++
					if p.isOp(")") {
						break
					}
					e, err := p.parseExpr()
					if err != nil {
						return nil, err
					}
					items = append(items, e)
				}
				e = &listExpr{items: items, tuple: true}
			}
			return e, p.expectOp(")")
		case "[":
			l := &listExpr{}
			for !p.isOp("]") {
				e, err := p.parseExpr()
				if err != nil {
					return nil, err
				}
				l.items = append(l.items, e)
				if !p.isOp(",") {
					break
				}
				p.pos++
			}
			return l, p.expectOp("]")
		case "{":
			d := &dictExpr{}
			for !p.isOp("}") {
				k, err := p.parseExpr()
				if err != nil {
					return nil, err
				}
				if err := p.expectOp(":"); err != nil {
					return nil, err
				}
				v, err := p.parseExpr()
				if err != nil {
					return nil, err
				}
				d.keys = append(d.keys, k)
				d.vals = append(d.vals, v)
				if !p.isOp(",") {
					break
				}
				p.pos++
			}
			return d, p.expectOp("}")
		}
	}
	p.pos--
	return nil, p.errf("unexpected %s", t)
}

func (p *parser) parsePostfix(e expr) (expr, error) {
	for {
		switch {
		case p.isOp("."):
			p.pos++
			t := p.next()
			switch t.kind {
			case tName:
				e = &attrExpr{e, t.val}
			case tInt:
				e = &itemExpr{e, &constExpr{t.num}}
			case tFloat: // a.0.1 lexes as a . 0.1
				parts := splitDot(t.val)
				for _, s := range parts {
					var n int64
					fmt.Sscan(s, &n)
					e = &itemExpr{e, &constExpr{n}}
				}
			default:
				return nil, p.errf("expected attribute name")
			}
		case p.isOp("["):
			p.pos++
			var parts [3]expr
			idx, colons := 0, 0
			for !p.isOp("]") {
				if p.isOp(":") {
					p.pos++
					colons++
					idx++
					continue
				}
				x, err := p.parseExpr()
				if err != nil {
					return nil, err
				}
				if idx < 3 {
					parts[idx] = x
				}
			}
			p.pos++
			if colons == 0 {
				e = &itemExpr{e, parts[0]}
			} else {
				e = &sliceExpr{e, parts[0], parts[1], parts[2]}
			}
		case p.isOp("("):
			args, err := p.parseArgs()
			if err != nil {
				return nil, err
			}
			e = &callExpr{e, args}
		default:
			return e, nil
		}
	}
}

func splitDot(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func (p *parser) parseArgs() ([]arg, error) {
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	var args []arg
	for !p.isOp(")") {
		a := arg{}
		if p.isOp("*") || p.isOp("**") {
			p.pos++
			a.star = true
		} else if p.peek().kind == tName && p.toks[p.pos+1].kind == tOp && p.toks[p.pos+1].val == "=" {
			a.name = p.next().val
			p.pos++
		}
		v, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		a.value = v
		args = append(args, a)
		if !p.isOp(",") {
			break
		}
		p.pos++
	}
	return args, p.expectOp(")")
}

func (p *parser) parseFilterExpr(e expr) (expr, error) {
	for {
		switch {
		case p.isOp("|"):
			p.pos++
			name, err := p.expectName()
			if err != nil {
				return nil, err
			}
			for p.isOp(".") {
				p.pos++
				n2, err := p.expectName()
				if err != nil {
					return nil, err
				}
				name += "." + n2
			}
			f := newFilterExpr(e, name)
			if p.isOp("(") {
				if f.args, err = p.parseArgs(); err != nil {
					return nil, err
				}
			}
			e = f
			var err2 error
			if e, err2 = p.parsePostfix(e); err2 != nil {
				return nil, err2
			}
		case p.isName("is"):
			p.pos++
			t := &testExpr{obj: e}
			if p.isName("not") {
				p.pos++
				t.neg = true
			}
			tk := p.next()
			if tk.kind != tName && !(tk.kind == tOp && (tk.val == "==" || tk.val == "!=" || tk.val == "<" || tk.val == ">" || tk.val == "<=" || tk.val == ">=")) {
				p.pos--
				return nil, p.errf("expected test name")
			}
			t.name = tk.val
			if tk.kind == tName && (tk.val == "none" || tk.val == "true" || tk.val == "false" || tk.val == "None" || tk.val == "True" || tk.val == "False") {
				t.name = lowerASCII(tk.val)
			}
			if p.isOp("(") {
				var err error
				if t.args, err = p.parseArgs(); err != nil {
					return nil, err
				}
			} else if nt := p.peek(); nt.kind == tString || nt.kind == tInt || nt.kind == tFloat ||
				(nt.kind == tName && nt.val != "and" && nt.val != "or" && nt.val != "if" && nt.val != "else" && nt.val != "in" && nt.val != "not" && nt.val != "is") || (nt.kind == tOp && (nt.val == "[" || nt.val == "{")) {
				x, err := p.parseUnary(false)
				if err != nil {
					return nil, err
				}
				t.args = []arg{{value: x}}
			}
			e = t
		default:
			return e, nil
		}
	}
}
