package template

import (
	"fmt"
)

// ---- AST ----

type node interface{}

type (
	textNode   struct{ s string }
	outputNode struct{ e expr }
	ifNode     struct {
		conds  []expr
		bodies [][]node
		els    []node
	}
	forNode struct {
		targets   []string
		iter      expr
		cond      expr
		recursive bool
		body      []node
		els       []node
	}
	setNode struct {
		targets []expr // nameExpr or attrExpr
		value   expr
		body    []node // block set
	}
	macroNode struct {
		name     string
		params   []string
		defaults []expr
		body     []node
	}
	callBlockNode struct {
		params []string
		defs   []expr
		call   expr
		body   []node
	}
	filterBlockNode struct {
		filter *filterExpr
		body   []node
	}
	breakNode    struct{}
	continueNode struct{}
)

type expr interface{}

type (
	constExpr struct{ v any }
	nameExpr  struct{ name string }
	listExpr  struct {
		items []expr
		tuple bool
	}
	dictExpr struct{ keys, vals []expr }
	attrExpr struct {
		obj  expr
		name string
	}
	itemExpr  struct{ obj, key expr }
	sliceExpr struct{ obj, start, stop, step expr }
	callExpr  struct {
		fn   expr
		args []arg
	}
	filterExpr struct {
		obj  expr // nil inside filter blocks
		name string
		args []arg
		fn   filter // filters[name], looked up once; zero if there is none
	}
	testExpr struct {
		obj  expr
		name string
		args []arg
		neg  bool
	}
	binExpr struct {
		op   string
		l, r expr
	}
	unaryExpr struct {
		op string
		x  expr
	}
	condExpr struct{ cond, yes, no expr }
)

type arg struct {
	name  string // keyword name, "" for positional
	star  bool   // *x
	value expr
}

// ---- parser ----

type parser struct {
	toks []token
	pos  int
}

func (p *parser) peek() token { return p.toks[p.pos] }
func (p *parser) next() token { t := p.toks[p.pos]; p.pos++; return t }

func (p *parser) errf(format string, a ...any) error {
	return fmt.Errorf("template: line %d: %s", p.peek().line, fmt.Sprintf(format, a...))
}

func (p *parser) isOp(v string) bool {
	t := p.peek()
	return t.kind == tOp && t.val == v
}

func (p *parser) isName(v string) bool {
	t := p.peek()
	return t.kind == tName && t.val == v
}

func (p *parser) expectOp(v string) error {
	if !p.isOp(v) {
		return p.errf("expected %q, got %s", v, p.peek())
	}
	p.pos++
	return nil
}

func (p *parser) expectName() (string, error) {
	t := p.peek()
	if t.kind != tName {
		return "", p.errf("expected a name, got %s", t)
	}
	p.pos++
	return t.val, nil
}

func (p *parser) expectBlockEnd() error {
	if p.peek().kind != tBlockEnd {
		return p.errf("expected end of block, got %s", p.peek())
	}
	p.pos++
	return nil
}

func parse(toks []token) ([]node, error) {
	p := &parser{toks: toks}
	body, end, err := p.parseBody(nil)
	if err != nil {
		return nil, err
	}
	if end != "" {
		return nil, p.errf("unexpected '%s'", end)
	}
	return body, nil
}

// parseBody parses nodes until one of the end tags (a block starting with a
// name in ends) or EOF. It returns the end tag name, leaving the parser
// positioned after the tag name.
func (p *parser) parseBody(ends []string) ([]node, string, error) {
	var out []node
	for {
		t := p.peek()
		switch t.kind {
		case tEOF:
			if len(ends) > 0 {
				return nil, "", p.errf("unexpected end of template, expected %v", ends)
			}
			return out, "", nil
		case tText:
			p.pos++
			out = append(out, &textNode{t.val})
		case tVarBegin:
			p.pos++
			e, err := p.parseExpr()
			if err != nil {
				return nil, "", err
			}
			if p.peek().kind != tVarEnd {
				return nil, "", p.errf("expected '}}', got %s", p.peek())
			}
			p.pos++
			out = append(out, &outputNode{e})
		case tBlockBegin:
			p.pos++
			kw := p.peek()
			if kw.kind != tName {
				return nil, "", p.errf("expected a statement name")
			}
			for _, e := range ends {
				if kw.val == e {
					p.pos++
					return out, e, nil
				}
			}
			p.pos++
			n, err := p.parseStmt(kw.val)
			if err != nil {
				return nil, "", err
			}
			if n != nil {
				out = append(out, n)
			}
		default:
			return nil, "", p.errf("unexpected %s", t)
		}
	}
}

func (p *parser) skipToBlockEnd() error {
	for p.peek().kind != tBlockEnd && p.peek().kind != tEOF {
		p.pos++
	}
	return p.expectBlockEnd()
}

func (p *parser) parseParams() ([]string, []expr, error) {
	if err := p.expectOp("("); err != nil {
		return nil, nil, err
	}
	var names []string
	var defs []expr
	for !p.isOp(")") {
		name, err := p.expectName()
		if err != nil {
			return nil, nil, err
		}
		var d expr
		if p.isOp("=") {
			p.pos++
			if d, err = p.parseExpr(); err != nil {
				return nil, nil, err
			}
		}
		names = append(names, name)
		defs = append(defs, d)
		if !p.isOp(",") {
			break
		}
		p.pos++
	}
	return names, defs, p.expectOp(")")
}

func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}
