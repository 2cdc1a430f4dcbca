package template

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUndefined is returned where Jinja2 raises jinja2.UndefinedError.
var ErrUndefined = errors.New("template: undefined value")

// ErrRaised wraps messages from raise_exception().
var ErrRaised = errors.New("template: raise_exception")

type scope struct {
	vars   map[string]any
	parent *scope
}

func (s *scope) lookup(name string) (any, bool) {
	for c := s; c != nil; c = c.parent {
		if v, ok := c.vars[name]; ok {
			return v, true
		}
	}
	return nil, false
}

type ctrl int

const (
	ctrlNone ctrl = iota
	ctrlBreak
	ctrlContinue
)

type evaluator struct {
	t   *Template
	d   Dialect
	out *strings.Builder
}

type macro struct {
	name     string
	params   []string
	defaults []expr
	body     []node
	closure  *scope
}

func (e *evaluator) execBody(nodes []node, sc *scope) (ctrl, error) {
	for _, n := range nodes {
		c, err := e.exec(n, sc)
		if err != nil || c != ctrlNone {
			return c, err
		}
	}
	return ctrlNone, nil
}

func (e *evaluator) capture(nodes []node, sc *scope) (string, error) {
	saved := e.out
	var sb strings.Builder
	e.out = &sb
	_, err := e.execBody(nodes, sc)
	e.out = saved
	return sb.String(), err
}

func (e *evaluator) exec(n node, sc *scope) (ctrl, error) {
	switch n := n.(type) {
	case *textNode:
		e.out.WriteString(n.s)
	case *outputNode:
		v, err := e.eval(n.e, sc)
		if err != nil {
			return 0, err
		}
		e.out.WriteString(e.d.output(v))
	case *ifNode:
		for i, c := range n.conds {
			v, err := e.eval(c, sc)
			if err != nil {
				return 0, err
			}
			if truthy(v) {
				return e.execBody(n.bodies[i], sc)
			}
		}
		return e.execBody(n.els, sc)
	case *forNode:
		return e.execFor(n, sc)
	case *setNode:
		var v any
		var err error
		if n.body != nil {
			v, err = e.capture(n.body, sc)
		} else {
			v, err = e.eval(n.value, sc)
		}
		if err != nil {
			return 0, err
		}
		if len(n.targets) == 0 {
			return 0, nil
		}
		if len(n.targets) == 1 {
			return 0, e.assign(n.targets[0], v, sc)
		}
		items, err := iterate(v)
		if err != nil {
			return 0, err
		}
		if len(items) != len(n.targets) {
			return 0, fmt.Errorf("template: cannot unpack %d values into %d names", len(items), len(n.targets))
		}
		for i, t := range n.targets {
			if err := e.assign(t, items[i], sc); err != nil {
				return 0, err
			}
		}
	case *macroNode:
		sc.vars[n.name] = &macro{name: n.name, params: n.params, defaults: n.defaults, body: n.body, closure: sc}
	case *callBlockNode:
		caller := &macro{name: "caller", params: n.params, defaults: n.defs, body: n.body, closure: sc}
		ce, ok := n.call.(*callExpr)
		if !ok {
			return 0, fmt.Errorf("template: call block needs a call expression")
		}
		fn, err := e.eval(ce.fn, sc)
		if err != nil {
			return 0, err
		}
		args, kw, err := e.evalArgs(ce.args, sc)
		if err != nil {
			return 0, err
		}
		m, ok := fn.(*macro)
		if !ok {
			return 0, fmt.Errorf("template: call block target is not a macro")
		}
		v, err := e.callMacro(m, args, kw, caller)
		if err != nil {
			return 0, err
		}
		e.out.WriteString(e.d.output(v))
	case *filterBlockNode:
		s, err := e.capture(n.body, sc)
		if err != nil {
			return 0, err
		}
		args, kw, err := e.evalArgs(n.filter.args, sc)
		if err != nil {
			return 0, err
		}
		v, err := e.runFilter(n.filter.fn, n.filter.name, s, args, kw)
		if err != nil {
			return 0, err
		}
		e.out.WriteString(e.d.output(v))
	case *breakNode:
		return ctrlBreak, nil
	case *continueNode:
		return ctrlContinue, nil
	default:
		return 0, fmt.Errorf("template: unknown node %T", n)
	}
	return ctrlNone, nil
}

func (e *evaluator) assign(t expr, v any, sc *scope) error {
	switch t := t.(type) {
	case *nameExpr:
		sc.vars[t.name] = v
		return nil
	case *attrExpr:
		obj, err := e.eval(t.obj, sc)
		if err != nil {
			return err
		}
		ns, ok := obj.(*namespace)
		if !ok {
			return fmt.Errorf("template: cannot assign attribute on non-namespace object")
		}
		ns.m.Set(t.name, v)
		return nil
	}
	return fmt.Errorf("template: cannot assign to %T", t)
}

func iterate(v any) ([]any, error) {
	switch x := v.(type) {
	case []any:
		return x, nil
	case *OrderedMap:
		out := make([]any, len(x.keys))
		for i, k := range x.keys {
			out[i] = k
		}
		return out, nil
	case string:
		out := []any{}
		for _, r := range x {
			out = append(out, string(r))
		}
		return out, nil
	case undefined:
		return nil, nil
	case *generator:
		return x.items, nil
	}
	return nil, fmt.Errorf("template: '%s' object is not iterable", typeName(v))
}

func (e *evaluator) eval(x expr, sc *scope) (any, error) {
	switch x := x.(type) {
	case *constExpr:
		return x.v, nil
	case *nameExpr:
		if v, ok := sc.lookup(x.name); ok {
			return v, nil
		}
		if g, ok := globals[x.name]; ok {
			return g, nil
		}
		if v, ok := e.d.literal(x.name); ok {
			return v, nil
		}
		return undefined{x.name}, nil
	case *listExpr:
		out := make([]any, 0, len(x.items))
		for _, it := range x.items {
			v, err := e.eval(it, sc)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case *dictExpr:
		m := NewOrderedMap()
		for i := range x.keys {
			k, err := e.eval(x.keys[i], sc)
			if err != nil {
				return nil, err
			}
			v, err := e.eval(x.vals[i], sc)
			if err != nil {
				return nil, err
			}
			m.Set(str(k), v)
		}
		return m, nil
	case *attrExpr:
		obj, err := e.eval(x.obj, sc)
		if err != nil {
			return nil, err
		}
		return getAttr(obj, x.name)
	case *itemExpr:
		obj, err := e.eval(x.obj, sc)
		if err != nil {
			return nil, err
		}
		k, err := e.eval(x.key, sc)
		if err != nil {
			return nil, err
		}
		return getItem(obj, k)
	case *sliceExpr:
		obj, err := e.eval(x.obj, sc)
		if err != nil {
			return nil, err
		}
		var idx [3]any
		for i, p := range []expr{x.start, x.stop, x.step} {
			if p == nil {
				continue
			}
			if idx[i], err = e.eval(p, sc); err != nil {
				return nil, err
			}
		}
		return slice(obj, idx[0], idx[1], idx[2])
	case *callExpr:
		return e.evalCall(x, sc)
	case *filterExpr:
		if x.name == "default" || x.name == "d" {
			// default must see undefined without raising
		}
		obj, err := e.eval(x.obj, sc)
		if err != nil {
			return nil, err
		}
		args, kw, err := e.evalArgs(x.args, sc)
		if err != nil {
			return nil, err
		}
		return e.runFilter(x.fn, x.name, obj, args, kw)
	case *testExpr:
		obj, err := e.eval(x.obj, sc)
		if err != nil {
			return nil, err
		}
		args, _, err := e.evalArgs(x.args, sc)
		if err != nil {
			return nil, err
		}
		r, err := applyTest(e.d, x.name, obj, args)
		if err != nil {
			return nil, err
		}
		return r != x.neg, nil
	case *condExpr:
		c, err := e.eval(x.cond, sc)
		if err != nil {
			return nil, err
		}
		if truthy(c) {
			return e.eval(x.yes, sc)
		}
		if x.no == nil {
			return undefined{}, nil
		}
		return e.eval(x.no, sc)
	case *unaryExpr:
		v, err := e.eval(x.x, sc)
		if err != nil {
			return nil, err
		}
		switch x.op {
		case "not":
			return !truthy(v), nil
		case "-":
			switch n := v.(type) {
			case int64:
				return -n, nil
			case float64:
				return -n, nil
			case bool:
				if n {
					return int64(-1), nil
				}
				return int64(0), nil
			}
			return nil, fmt.Errorf("template: bad operand type for unary -: '%s'", typeName(v))
		case "+":
			if !isNumber(v) {
				return nil, fmt.Errorf("template: bad operand type for unary +: '%s'", typeName(v))
			}
			if b, ok := v.(bool); ok {
				i, _ := asInt(b)
				return i, nil
			}
			return v, nil
		}
	case *binExpr:
		return e.evalBin(x, sc)
	}
	return nil, fmt.Errorf("template: cannot evaluate %T", x)
}

func (e *evaluator) evalBin(x *binExpr, sc *scope) (any, error) {
	if x.op == "+" || x.op == "~" {
		return e.evalConcat(x, sc)
	}
	l, err := e.eval(x.l, sc)
	if err != nil {
		return nil, err
	}
	switch x.op {
	case "and":
		if !truthy(l) {
			return l, nil
		}
		return e.eval(x.r, sc)
	case "or":
		if truthy(l) {
			return l, nil
		}
		return e.eval(x.r, sc)
	}
	r, err := e.eval(x.r, sc)
	if err != nil {
		return nil, err
	}
	return binop(e.d, x.op, l, r)
}

// evalConcat evaluates a left-leaning chain of + and ~ (a + b ~ c + d)
// left to right, as nested evalBin calls would, but joins a run of
// strings with one allocation instead of copying the growing left side at
// every step: templates build a message out of a long content that way.
// Any operand that is not a string goes through binop, in order.
func (e *evaluator) evalConcat(x *binExpr, sc *scope) (any, error) {
	var chain []*binExpr // innermost first
	var first expr = x
	for {
		b, ok := first.(*binExpr)
		if !ok || (b.op != "+" && b.op != "~") {
			break
		}
		chain = append(chain, b)
		first = b.l
	}
	acc, err := e.eval(first, sc)
	if err != nil {
		return nil, err
	}
	var parts []string // a run of strings not yet joined, acc's value
	if s, ok := acc.(string); ok {
		parts = append(parts, s)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		r, err := e.eval(chain[i].r, sc)
		if err != nil {
			return nil, err
		}
		if rs, ok := r.(string); ok && parts != nil {
			parts = append(parts, rs)
			continue
		}
		if parts != nil {
			acc = strings.Join(parts, "")
			parts = nil
		}
		if acc, err = binop(e.d, chain[i].op, acc, r); err != nil {
			return nil, err
		}
		if s, ok := acc.(string); ok {
			parts = append(parts, s)
		}
	}
	if parts != nil {
		return strings.Join(parts, ""), nil
	}
	return acc, nil
}

func undefErr(v any) error {
	u := v.(undefined)
	if u.name != "" {
		return fmt.Errorf("%w: '%s' is undefined", ErrUndefined, u.name)
	}
	return ErrUndefined
}

func (e *evaluator) evalArgs(args []arg, sc *scope) ([]any, *OrderedMap, error) {
	var pos []any
	var kw *OrderedMap
	for _, a := range args {
		v, err := e.eval(a.value, sc)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case a.star:
			if m, ok := v.(*OrderedMap); ok {
				if kw == nil {
					kw = NewOrderedMap()
				}
				for _, k := range m.keys {
					kw.Set(k, m.m[k])
				}
				continue
			}
			items, err := iterate(v)
			if err != nil {
				return nil, nil, err
			}
			pos = append(pos, items...)
		case a.name != "":
			if kw == nil {
				kw = NewOrderedMap()
			}
			kw.Set(a.name, v)
		default:
			pos = append(pos, v)
		}
	}
	if kw == nil {
		kw = NewOrderedMap()
	}
	return pos, kw, nil
}

func (e *evaluator) evalCall(x *callExpr, sc *scope) (any, error) {
	fn, err := e.eval(x.fn, sc)
	if err != nil {
		return nil, err
	}
	args, kw, err := e.evalArgs(x.args, sc)
	if err != nil {
		return nil, err
	}
	switch f := fn.(type) {
	case *macro:
		var caller any
		if c, ok := sc.lookup("caller"); ok {
			_ = c
		}
		return e.callMacro(f, args, kw, caller)
	case builtin:
		return f(e, args, kw)
	case *boundMethod:
		if err := e.d.checkMethodKwargs(f, kw); err != nil {
			return nil, err
		}
		return callMethod(f.recv, f.name, args, kw)
	case *loopInfo:
		return e.callLoop(f, args, kw)
	case undefined:
		return nil, fmt.Errorf("%w: '%s' is undefined and cannot be called", ErrUndefined, f.name)
	}
	return nil, fmt.Errorf("template: '%s' object is not callable", typeName(fn))
}

func (e *evaluator) callMacro(m *macro, args []any, kw *OrderedMap, caller any) (any, error) {
	sc := &scope{vars: map[string]any{}, parent: m.closure}
	var varargs []any
	for i, p := range m.params {
		switch {
		case i < len(args):
			sc.vars[p] = args[i]
		default:
			if v, ok := kw.m[p]; ok {
				sc.vars[p] = v
			} else if m.defaults[i] != nil {
				v, err := e.eval(m.defaults[i], sc)
				if err != nil {
					return nil, err
				}
				sc.vars[p] = v
			} else {
				sc.vars[p] = undefined{p}
			}
		}
	}
	if len(args) > len(m.params) {
		varargs = args[len(m.params):]
	}
	sc.vars["varargs"] = append([]any{}, varargs...)
	kwargs := NewOrderedMap()
	for _, k := range kw.keys {
		found := false
		for _, p := range m.params {
			if p == k {
				found = true
			}
		}
		if !found {
			kwargs.Set(k, kw.m[k])
		}
	}
	sc.vars["kwargs"] = kwargs
	if caller != nil {
		sc.vars["caller"] = caller
	}
	return e.capture(m.body, sc)
}
