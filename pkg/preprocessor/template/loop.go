package template

import (
	"fmt"
	"strings"
)

// loopInfo is Jinja2's LoopContext: the `loop` variable inside a for
// block. In a recursive loop it is callable: loop(items) renders the loop
// body again over items, one level deeper.
type loopInfo struct {
	index0, length int
	items          []any
	depth          int      // 1 at the outermost level
	node           *forNode // the loop statement, for loop(...)
	sc             *scope   // the scope the loop statement runs in

	changedSet bool // loop.changed has been called
	changedVal []any
}

func (e *evaluator) execFor(n *forNode, sc *scope) (ctrl, error) {
	it, err := e.eval(n.iter, sc)
	if err != nil {
		return 0, err
	}
	return e.runLoop(n, sc, it, 1)
}

// runLoop renders the for statement n over it at the given depth. Break and
// continue end here: they never leave the loop (or the loop(...) call).
func (e *evaluator) runLoop(n *forNode, sc *scope, it any, depth int) (ctrl, error) {
	items, err := iterate(it)
	if err != nil {
		return 0, err
	}
	inner := &scope{vars: map[string]any{}, parent: sc}
	bind := func(item any) error {
		if len(n.targets) == 1 {
			inner.vars[n.targets[0]] = item
			return nil
		}
		parts, err := iterate(item)
		if err != nil {
			return err
		}
		if len(parts) != len(n.targets) {
			return fmt.Errorf("template: cannot unpack %d values into %d names", len(parts), len(n.targets))
		}
		for i, name := range n.targets {
			inner.vars[name] = parts[i]
		}
		return nil
	}
	if n.cond != nil {
		var kept []any
		for _, item := range items {
			if err := bind(item); err != nil {
				return 0, err
			}
			v, err := e.eval(n.cond, inner)
			if err != nil {
				return 0, err
			}
			if truthy(v) {
				kept = append(kept, item)
			}
		}
		items = kept
	}
	if len(items) == 0 {
		return e.execBody(n.els, sc)
	}
	li := &loopInfo{length: len(items), items: items, depth: depth, node: n, sc: sc}
	for i, item := range items {
		inner.vars = map[string]any{}
		if err := bind(item); err != nil {
			return 0, err
		}
		li.index0 = i
		inner.vars["loop"] = li
		c, err := e.execBody(n.body, inner)
		if err != nil {
			return 0, err
		}
		if c == ctrlBreak {
			break
		}
	}
	return ctrlNone, nil
}

// callLoop is loop(items) in a recursive loop: it returns the rendered
// body for items, one level deeper.
func (e *evaluator) callLoop(l *loopInfo, args []any, kw *OrderedMap) (any, error) {
	if !l.node.recursive {
		return nil, fmt.Errorf("template: the loop must have the 'recursive' marker to be called recursively")
	}
	if len(args) != 1 || kw.Len() != 0 {
		return nil, fmt.Errorf("template: loop() takes exactly one positional argument (%d given)", len(args)+kw.Len())
	}
	saved := e.out
	defer func() { e.out = saved }()
	var sb strings.Builder
	e.out = &sb
	if _, err := e.runLoop(l.node, l.sc, args[0], l.depth+1); err != nil {
		return nil, err
	}
	return sb.String(), nil
}

func (l *loopInfo) attr(name string) any {
	i := l.index0
	switch name {
	case "index":
		return int64(i + 1)
	case "index0":
		return int64(i)
	case "first":
		return i == 0
	case "last":
		return i == l.length-1
	case "length":
		return int64(l.length)
	case "revindex":
		return int64(l.length - i)
	case "revindex0":
		return int64(l.length - i - 1)
	case "depth":
		return int64(l.depth)
	case "depth0":
		return int64(l.depth - 1)
	case "previtem":
		if i > 0 {
			return l.items[i-1]
		}
	case "nextitem":
		if i+1 < l.length {
			return l.items[i+1]
		}
	case "cycle":
		return builtin(func(e *evaluator, args []any, kw *OrderedMap) (any, error) {
			if len(args) == 0 {
				return nil, fmt.Errorf("template: no items for cycling given")
			}
			return args[i%len(args)], nil
		})
	case "changed":
		return builtin(func(e *evaluator, args []any, kw *OrderedMap) (any, error) {
			if l.changedSet && equal(l.changedVal, args) {
				return false, nil
			}
			l.changedSet, l.changedVal = true, append([]any(nil), args...)
			return true, nil
		})
	}
	return undefined{name}
}
