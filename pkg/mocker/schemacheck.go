package mocker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"
)

// GuidedAccepts reports whether text is an output that a request's guided
// decoding allows: with json, a JSON text that SchemaAccepts; with choice,
// one of the choices. ok is false when guided is empty or asks for
// neither (regex, grammar): the mocker cannot tell.
func GuidedAccepts(guided json.RawMessage, text string) (accepted, ok bool, err error) {
	if len(bytes.TrimSpace(guided)) == 0 || bytes.Equal(bytes.TrimSpace(guided), []byte("null")) {
		return false, false, nil
	}
	var g struct {
		JSON   json.RawMessage `json:"json"`
		Choice []string        `json:"choice"`
	}
	if err := json.Unmarshal(guided, &g); err != nil {
		return false, false, fmt.Errorf("%w: guided_decoding: %v", ErrSchema, err)
	}
	switch {
	case len(g.JSON) > 0 && !bytes.Equal(g.JSON, []byte("null")):
		accepted, err := SchemaAccepts(g.JSON, []byte(text))
		return accepted, err == nil, err
	case len(g.Choice) > 0:
		return slices.Contains(g.Choice, text), true, nil
	}
	return false, false, nil
}

// SchemaAccepts reports whether the JSON text value is an instance of a
// JSON schema (or of a JSON string holding one), reading the keywords
// SchemaInstance reads: type (or a list of types), enum, const, anyOf,
// oneOf, allOf, local $ref, properties, required, additionalProperties,
// items, prefixItems, minItems, maxItems, minLength, maxLength, minimum,
// maximum, exclusiveMinimum and exclusiveMaximum. Other keywords are not
// checked. A value that is not JSON is not an instance; a schema it
// cannot read is an error wrapping ErrSchema.
func SchemaAccepts(schema, value []byte) (bool, error) {
	raw := bytes.TrimSpace(schema)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return false, fmt.Errorf("%w: %v", ErrSchema, err)
		}
		raw = []byte(s)
	}
	root, err := decodeNumbers(raw)
	if err != nil {
		return false, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	v, err := decodeNumbers(value)
	if err != nil {
		return false, nil
	}
	c := &checker{g: &instanceGen{root: root, raw: raw}}
	return c.accepts(root, v, 0)
}

func decodeNumbers(b []byte) (any, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("data after the JSON value")
	}
	return v, nil
}

type checker struct{ g *instanceGen }

func (c *checker) accepts(node, v any, depth int) (bool, error) {
	if depth > maxSchemaDepth {
		return false, fmt.Errorf("%w: nested deeper than %d (a recursive $ref?)", ErrSchema, maxSchemaDepth)
	}
	s, ok := node.(map[string]any)
	if !ok {
		if b, isBool := node.(bool); isBool {
			return b, nil
		}
		return false, fmt.Errorf("%w: a schema must be an object, got %s", ErrSchema, compact(node))
	}
	if ref, ok := s["$ref"].(string); ok {
		target, err := c.g.resolve(ref)
		if err != nil {
			return false, err
		}
		if ok, err := c.accepts(target, v, depth+1); !ok || err != nil {
			return false, err
		}
	}
	if enum, ok := s["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return sameJSON(e, v) }) {
		return false, nil
	}
	if k, ok := s["const"]; ok && !sameJSON(k, v) {
		return false, nil
	}
	for _, kw := range []string{"anyOf", "oneOf", "allOf"} {
		branches, ok := s[kw].([]any)
		if !ok {
			continue
		}
		n := 0
		for _, b := range branches {
			ok, err := c.accepts(b, v, depth+1)
			if err != nil {
				return false, err
			}
			if ok {
				n++
			}
		}
		switch {
		case kw == "anyOf" && n == 0, kw == "oneOf" && n != 1, kw == "allOf" && n != len(branches):
			return false, nil
		}
	}
	if !typeAllows(s["type"], v) {
		return false, nil
	}
	switch x := v.(type) {
	case map[string]any:
		return c.object(s, x, depth)
	case []any:
		return c.array(s, x, depth)
	case string:
		n := float64(utf8.RuneCountInString(x))
		lo, hasLo := number(s["minLength"])
		hi, hasHi := number(s["maxLength"])
		return (!hasLo || n >= lo) && (!hasHi || n <= hi), nil
	case json.Number:
		f, _ := x.Float64()
		return inRange(s, f), nil
	}
	return true, nil
}

func (c *checker) object(s, obj map[string]any, depth int) (bool, error) {
	props, _ := s["properties"].(map[string]any)
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				if _, present := obj[name]; !present {
					return false, nil
				}
			}
		}
	}
	for k, val := range obj {
		sub, ok := props[k]
		if !ok {
			sub, ok = s["additionalProperties"]
		}
		if !ok {
			continue
		}
		if ok, err := c.accepts(sub, val, depth+1); !ok || err != nil {
			return false, err
		}
	}
	return true, nil
}

func (c *checker) array(s map[string]any, arr []any, depth int) (bool, error) {
	n := float64(len(arr))
	if lo, ok := number(s["minItems"]); ok && n < lo {
		return false, nil
	}
	if hi, ok := number(s["maxItems"]); ok && n > hi {
		return false, nil
	}
	prefix, _ := s["prefixItems"].([]any)
	for i, item := range arr {
		sub, ok := s["items"]
		if i < len(prefix) {
			sub, ok = prefix[i], true
		}
		if !ok {
			continue
		}
		if ok, err := c.accepts(sub, item, depth+1); !ok || err != nil {
			return false, err
		}
	}
	return true, nil
}

// typeAllows reports whether v has the type t names (a name or a list;
// absent: any). An integer is a number with no fraction.
func typeAllows(t, v any) bool {
	var names []any
	switch x := t.(type) {
	case nil:
		return true
	case string:
		names = []any{x}
	case []any:
		names = x
	}
	for _, n := range names {
		switch n {
		case "object":
			if _, ok := v.(map[string]any); ok {
				return true
			}
		case "array":
			if _, ok := v.([]any); ok {
				return true
			}
		case "string":
			if _, ok := v.(string); ok {
				return true
			}
		case "boolean":
			if _, ok := v.(bool); ok {
				return true
			}
		case "null":
			if v == nil {
				return true
			}
		case "number", "integer":
			num, ok := v.(json.Number)
			if !ok {
				continue
			}
			f, err := num.Float64()
			if err == nil && (n == "number" || f == math.Trunc(f)) {
				return true
			}
		}
	}
	return false
}

// inRange checks a number against minimum, maximum and the exclusive
// bounds (numbers, as in draft 6 and later).
func inRange(s map[string]any, f float64) bool {
	if lo, ok := number(s["minimum"]); ok && f < lo {
		return false
	}
	if hi, ok := number(s["maximum"]); ok && f > hi {
		return false
	}
	if lo, ok := number(s["exclusiveMinimum"]); ok && f <= lo {
		return false
	}
	if hi, ok := number(s["exclusiveMaximum"]); ok && f >= hi {
		return false
	}
	return true
}

// sameJSON reports whether two decoded JSON values are equal (numbers by
// value).
func sameJSON(a, b any) bool {
	if x, ok := a.(json.Number); ok {
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		fx, e1 := x.Float64()
		fy, e2 := y.Float64()
		return e1 == nil && e2 == nil && fx == fy
	}
	ab, _ := json.Marshal(a)
	bb, _ := json.Marshal(b)
	return bytes.Equal(ab, bb)
}
