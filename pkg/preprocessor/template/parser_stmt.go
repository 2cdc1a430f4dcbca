package template

// stmtParser parses one statement, {% keyword ... %}, from just after its
// keyword up to and including the end of its closing tag.
type stmtParser func(p *parser) (node, error)

// statements maps each statement keyword to its parser; adding a statement
// is adding an entry. End tags (endif, else, ...) are not statements: the
// enclosing statement's parseBody stops at them, and anywhere else they
// are unknown statements. The table is filled in
// init because statement parsers parse bodies, which dispatch through this
// table, and a package-level initializer would be an initialization cycle.
var statements map[string]stmtParser

func init() {
	statements = map[string]stmtParser{
		"if":         (*parser).parseIf,
		"for":        (*parser).parseFor,
		"set":        (*parser).parseSet,
		"macro":      (*parser).parseMacro,
		"call":       (*parser).parseCallBlock,
		"filter":     (*parser).parseFilterBlock,
		"break":      (*parser).parseBreak,
		"continue":   (*parser).parseContinue,
		"generation": (*parser).parseGeneration,
		"do":         (*parser).parseDo,
	}
}

// parseStmt parses the statement that starts with keyword kw.
func (p *parser) parseStmt(kw string) (node, error) {
	if parse, ok := statements[kw]; ok {
		return parse(p)
	}
	return nil, p.errf("unknown statement %q", kw)
}

// parseIf parses if ... (elif ...)* (else ...)? endif.
func (p *parser) parseIf() (node, error) {
	n := &ifNode{}
	for {
		cond, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		if err := p.expectBlockEnd(); err != nil {
			return nil, err
		}
		body, end, err := p.parseBody([]string{"elif", "else", "endif"})
		if err != nil {
			return nil, err
		}
		n.conds = append(n.conds, cond)
		n.bodies = append(n.bodies, body)
		if end == "elif" {
			continue
		}
		if n.els, err = p.parseElse(end, "endif"); err != nil {
			return nil, err
		}
		return n, p.expectBlockEnd()
	}
}

// parseElse parses the else branch up to closer when end, the tag that
// ended the previous branch, is "else"; otherwise there is none.
func (p *parser) parseElse(end, closer string) ([]node, error) {
	if end != "else" {
		return nil, nil
	}
	return p.parseBlock(closer)
}

// parseBlock parses "%}", then a body up to the closer tag, leaving the
// parser after the closer's name.
func (p *parser) parseBlock(closer string) ([]node, error) {
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	body, _, err := p.parseBody([]string{closer})
	return body, err
}

// parseFor parses for targets in iter (if cond)? (recursive)? ... (else
// ...)? endfor.
func (p *parser) parseFor() (node, error) {
	n, err := p.parseForHead()
	if err != nil {
		return nil, err
	}
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	body, end, err := p.parseBody([]string{"else", "endfor"})
	if err != nil {
		return nil, err
	}
	n.body = body
	if n.els, err = p.parseElse(end, "endfor"); err != nil {
		return nil, err
	}
	return n, p.expectBlockEnd()
}

// parseForHead parses the loop header: targets in iter (if cond)?
// (recursive)?
func (p *parser) parseForHead() (*forNode, error) {
	targets, err := p.parseForTargets()
	if err != nil {
		return nil, err
	}
	n := &forNode{targets: targets}
	if !p.isName("in") {
		return nil, p.errf("expected 'in'")
	}
	p.pos++
	if n.iter, err = p.parseOr(true); err != nil {
		return nil, err
	}
	if p.isName("if") {
		p.pos++
		if n.cond, err = p.parseOr(true); err != nil {
			return nil, err
		}
	}
	if p.isName("recursive") {
		p.pos++
		n.recursive = true
	}
	return n, nil
}

// parseForTargets parses the loop variables: names separated by commas,
// parentheses ignored.
func (p *parser) parseForTargets() ([]string, error) {
	var targets []string
	for {
		if p.isOp("(") {
			p.pos++
			continue
		}
		name, err := p.expectName()
		if err != nil {
			return nil, err
		}
		targets = append(targets, name)
		if p.isOp(")") {
			p.pos++
		}
		if !p.isOp(",") {
			return targets, nil
		}
		p.pos++
	}
}

// parseSet parses set targets = value, or the block form set target ...
// endset.
func (p *parser) parseSet() (node, error) {
	targets, err := p.parseSetTargets()
	if err != nil {
		return nil, err
	}
	n := &setNode{targets: targets}
	if p.peek().kind == tBlockEnd {
		if n.body, err = p.parseBlock("endset"); err != nil {
			return nil, err
		}
		return n, p.expectBlockEnd()
	}
	if err := p.expectOp("="); err != nil {
		return nil, err
	}
	if n.value, err = p.parseTuple(); err != nil {
		return nil, err
	}
	return n, p.expectBlockEnd()
}

// parseSetTargets parses the assignment targets: names or dotted
// attributes (ns.x) separated by commas, parentheses ignored.
func (p *parser) parseSetTargets() ([]expr, error) {
	var targets []expr
	for {
		if p.isOp("(") || p.isOp(")") {
			p.pos++
			continue
		}
		target, err := p.parseSetTarget()
		if err != nil {
			return nil, err
		}
		targets = append(targets, target)
		if p.isOp(")") {
			p.pos++
		}
		if !p.isOp(",") {
			return targets, nil
		}
		p.pos++
	}
}

// parseSetTarget parses one assignment target, name(.attr)*.
func (p *parser) parseSetTarget() (expr, error) {
	name, err := p.expectName()
	if err != nil {
		return nil, err
	}
	var target expr = &nameExpr{name}
	for p.isOp(".") {
		p.pos++
		attr, err := p.expectName()
		if err != nil {
			return nil, err
		}
		target = &attrExpr{target, attr}
	}
	return target, nil
}

// parseMacro parses macro name(params) ... endmacro. Anything between
// endmacro and the end of its tag is skipped.
func (p *parser) parseMacro() (node, error) {
	name, err := p.expectName()
	if err != nil {
		return nil, err
	}
	n := &macroNode{name: name}
	if n.params, n.defaults, err = p.parseParams(); err != nil {
		return nil, err
	}
	if n.body, err = p.parseBlock("endmacro"); err != nil {
		return nil, err
	}
	return n, p.skipToBlockEnd()
}

// parseCallBlock parses call(params)? macro(args) ... endcall.
func (p *parser) parseCallBlock() (node, error) {
	n := &callBlockNode{}
	var err error
	if p.isOp("(") {
		if n.params, n.defs, err = p.parseParams(); err != nil {
			return nil, err
		}
	}
	if n.call, err = p.parseExpr(); err != nil {
		return nil, err
	}
	if n.body, err = p.parseBlock("endcall"); err != nil {
		return nil, err
	}
	return n, p.expectBlockEnd()
}

// parseFilterBlock parses filter name(args)? ... endfilter.
func (p *parser) parseFilterBlock() (node, error) {
	name, err := p.expectName()
	if err != nil {
		return nil, err
	}
	f := newFilterExpr(nil, name)
	if p.isOp("(") {
		if f.args, err = p.parseArgs(); err != nil {
			return nil, err
		}
	}
	body, err := p.parseBlock("endfilter")
	if err != nil {
		return nil, err
	}
	return &filterBlockNode{f, body}, p.expectBlockEnd()
}

func (p *parser) parseBreak() (node, error) {
	return &breakNode{}, p.expectBlockEnd()
}

func (p *parser) parseContinue() (node, error) {
	return &continueNode{}, p.expectBlockEnd()
}

// parseGeneration parses generation ... endgeneration, transformers'
// AssistantTracker block; it renders its body unchanged.
func (p *parser) parseGeneration() (node, error) {
	body, err := p.parseBlock("endgeneration")
	if err != nil {
		return nil, err
	}
	return &ifNode{conds: []expr{&constExpr{true}}, bodies: [][]node{body}}, p.expectBlockEnd()
}

// parseDo parses do expr: the expression is evaluated for its effect.
func (p *parser) parseDo() (node, error) {
	e, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	return &setNode{value: e}, p.expectBlockEnd()
}
