package template

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Options configure a compiled template. The zero value is valid.
type Options struct {
	// Now is the clock behind strftime_now; nil means time.Now.
	Now func() time.Time

	// Dialect selects Python jinja2 (the zero value) or @huggingface/jinja
	// behaviour where the two differ.
	Dialect Dialect
}

// Template is a compiled chat template. It is immutable and safe for
// concurrent use.
type Template struct {
	body    []node
	now     func() time.Time
	dialect Dialect
}

// Compile parses src with transformers' Jinja2 settings (trim_blocks,
// lstrip_blocks, loopcontrols, the generation block).
func Compile(src string, opts Options) (*Template, error) {
	if !opts.Dialect.valid() {
		return nil, fmt.Errorf("template: unknown %v", opts.Dialect)
	}
	toks, err := lex(src)
	if err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	body, err := parse(toks)
	if err != nil {
		return nil, err
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Template{body: body, now: now, dialect: opts.Dialect}, nil
}

// Render renders the template with vars as the top-level context. Values
// are template values: nil, bool, int64, float64, string, []any,
// *OrderedMap (Go maps with string keys and int/float32 are converted).
func (t *Template) Render(vars *OrderedMap) (string, error) {
	sc := &scope{vars: map[string]any{}}
	if vars != nil {
		for _, k := range vars.keys {
			sc.vars[k] = normalize(vars.m[k])
		}
	}
	var sb strings.Builder
	e := &evaluator{t: t, d: t.dialect, out: &sb}
	root := &scope{vars: map[string]any{}, parent: sc}
	if _, err := e.execBody(t.body, root); err != nil {
		return "", err
	}
	return sb.String(), nil
}

// normalize converts plain Go values into template values.
func normalize(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case float32:
		return float64(x)
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out
	case []any:
		var out []any // copy on first change: never mutate the caller's values
		for i, e := range x {
			n := normalize(e)
			if out == nil && !sameValue(n, e) {
				out = append(make([]any, 0, len(x)), x[:i]...)
			}
			if out != nil {
				out = append(out, n)
			}
		}
		if out == nil {
			return x
		}
		return out
	case map[string]any:
		m := NewOrderedMap()
		for k, vv := range x {
			m.Set(k, normalize(vv))
		}
		return m
	}
	return v
}

var globals map[string]any

func init() {
	globals = map[string]any{
		"range":           builtin(builtinRange),
		"namespace":       builtin(builtinNamespace),
		"dict":            builtin(builtinDict),
		"raise_exception": builtin(builtinRaise),
		"strftime_now":    builtin(builtinStrftimeNow),
	}
}

func builtinRange(e *evaluator, args []any, kw *OrderedMap) (any, error) {
	var start, stop, step int64 = 0, 0, 1
	ints := make([]int64, len(args))
	for i, a := range args {
		n, ok := asInt(a)
		if !ok {
			return nil, fmt.Errorf("template: range() arguments must be integers, not %s", typeName(a))
		}
		ints[i] = n
	}
	switch len(ints) {
	case 1:
		stop = ints[0]
	case 2:
		start, stop = ints[0], ints[1]
	case 3:
		start, stop, step = ints[0], ints[1], ints[2]
	default:
		return nil, fmt.Errorf("template: range expected 1 to 3 arguments")
	}
	if step == 0 {
		return nil, fmt.Errorf("template: range() arg 3 must not be zero")
	}
	out := []any{}
	for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
		if len(out) > 1_000_000 {
			return nil, fmt.Errorf("template: range too big")
		}
		out = append(out, i)
	}
	return out, nil
}

func builtinNamespace(e *evaluator, args []any, kw *OrderedMap) (any, error) {
	m := NewOrderedMap()
	for _, a := range args {
		if am, ok := a.(*OrderedMap); ok {
			for _, k := range am.keys {
				m.Set(k, am.m[k])
			}
		}
	}
	for _, k := range kw.keys {
		m.Set(k, kw.m[k])
	}
	return &namespace{m}, nil
}

func builtinDict(e *evaluator, args []any, kw *OrderedMap) (any, error) {
	m := NewOrderedMap()
	for _, a := range args {
		if am, ok := a.(*OrderedMap); ok {
			for _, k := range am.keys {
				m.Set(k, am.m[k])
			}
		}
	}
	for _, k := range kw.keys {
		m.Set(k, kw.m[k])
	}
	return m, nil
}

func builtinRaise(e *evaluator, args []any, kw *OrderedMap) (any, error) {
	msg := ""
	if len(args) > 0 {
		msg = str(args[0])
	}
	return nil, fmt.Errorf("%w: %s", ErrRaised, msg)
}

func builtinStrftimeNow(e *evaluator, args []any, kw *OrderedMap) (any, error) {
	if len(args) == 0 {
		return nil, errors.New("template: strftime_now needs a format")
	}
	return strftime(e.t.now(), str(args[0])), nil
}

// strftime implements the common C/Python strftime directives.
func strftime(t time.Time, f string) string {
	var sb strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 >= len(f) {
			sb.WriteByte(f[i])
			continue
		}
		i++
		c := f[i]
		pad := true
		if c == '-' && i+1 < len(f) {
			pad = false
			i++
			c = f[i]
		}
		num := func(n, w int) {
			if pad {
				fmt.Fprintf(&sb, "%0*d", w, n)
			} else {
				fmt.Fprintf(&sb, "%d", n)
			}
		}
		switch c {
		case 'Y':
			fmt.Fprintf(&sb, "%d", t.Year())
		case 'y':
			num(t.Year()%100, 2)
		case 'm':
			num(int(t.Month()), 2)
		case 'd':
			num(t.Day(), 2)
		case 'e':
			fmt.Fprintf(&sb, "%2d", t.Day())
		case 'H':
			num(t.Hour(), 2)
		case 'I':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			num(h, 2)
		case 'M':
			num(t.Minute(), 2)
		case 'S':
			num(t.Second(), 2)
		case 'j':
			num(t.YearDay(), 3)
		case 'p':
			if t.Hour() < 12 {
				sb.WriteString("AM")
			} else {
				sb.WriteString("PM")
			}
		case 'B':
			sb.WriteString(t.Month().String())
		case 'b', 'h':
			sb.WriteString(t.Month().String()[:3])
		case 'A':
			sb.WriteString(t.Weekday().String())
		case 'a':
			sb.WriteString(t.Weekday().String()[:3])
		case 'Z':
			name, _ := t.Zone()
			sb.WriteString(name)
		case 'z':
			sb.WriteString(t.Format("-0700"))
		case 'F':
			sb.WriteString(t.Format("2006-01-02"))
		case 'T':
			sb.WriteString(t.Format("15:04:05"))
		case '%':
			sb.WriteByte('%')
		default:
			sb.WriteByte('%')
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

// sameValue reports whether normalize left v unchanged (pointer or scalar).
func sameValue(a, b any) bool {
	switch a.(type) {
	case []any:
		bl, ok := b.([]any)
		al := a.([]any)
		return ok && len(al) == len(bl) && (len(al) == 0 || &al[0] == &bl[0])
	case *OrderedMap, string, bool, int64, float64, nil:
		return a == b
	}
	return false
}
