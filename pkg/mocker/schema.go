package mocker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ErrSchema is wrapped by the errors of SchemaInstance and GuidedText: a
// schema they cannot read or make an instance of.
var ErrSchema = errors.New("mocker: json schema")

// Bounds of SchemaInstance: the depth of nested schemas ($ref included)
// and the items of one array.
const (
	maxSchemaDepth = 64
	maxSchemaItems = 1024
)

// GuidedText returns the output a request's guided decoding
// (sampling_options.guided_decoding: {"json": ..., "choice": [...], ...})
// asks for: with json, a JSON schema or a string holding one, the
// schema's instance (SchemaInstance); with choice, its first choice.
// ok is false when guided is empty or asks for neither (regex, grammar).
func GuidedText(guided json.RawMessage) (text string, ok bool, err error) {
	if len(bytes.TrimSpace(guided)) == 0 || bytes.Equal(bytes.TrimSpace(guided), []byte("null")) {
		return "", false, nil
	}
	var g struct {
		JSON   json.RawMessage `json:"json"`
		Choice []string        `json:"choice"`
	}
	if err := json.Unmarshal(guided, &g); err != nil {
		return "", false, fmt.Errorf("%w: guided_decoding: %v", ErrSchema, err)
	}
	switch {
	case len(g.JSON) > 0 && !bytes.Equal(g.JSON, []byte("null")):
		b, err := SchemaInstance(g.JSON)
		if err != nil {
			return "", false, err
		}
		return string(b), true, nil
	case len(g.Choice) > 0:
		return g.Choice[0], true, nil
	}
	return "", false, nil
}

// SchemaInstance returns a valid, deterministic instance of a JSON schema
// (or of a JSON string holding one), as compact JSON:
//   - enum: its first value; const: its value;
//   - anyOf, oneOf: an instance of the first branch; allOf: of the
//     branches' properties and required lists merged;
//   - $ref: "#/$defs/...", "#/definitions/..." or any JSON pointer into
//     the schema;
//   - object: its required properties, in the order of properties (all
//     properties when required is absent), each an instance of its schema;
//   - array: max(minItems, 1) items (at most maxItems), each an instance
//     of items (or of prefixItems in turn);
//   - string: "string" (padded to minLength, cut to maxLength), or a
//     sample of its format (date-time, date, time, email, uri, uuid, ...);
//   - integer: 1, number: 1.5, moved into [minimum, maximum];
//   - boolean: true; null: null;
//   - a type list takes its first type; no type: an object when the
//     schema has properties or no hint, an array when it has items.
//
// Keywords it does not read (pattern, uniqueItems, not, if/then,
// additionalProperties beyond the listed properties) are not honoured.
func SchemaInstance(schema []byte) ([]byte, error) {
	raw := bytes.TrimSpace(schema)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSchema, err)
		}
		raw = []byte(s)
	}
	var root any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // enum and const values keep their digits
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	g := &instanceGen{root: root, raw: raw}
	var buf bytes.Buffer
	if err := g.write(&buf, root, raw, 0); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// instanceGen writes schema instances. Schemas are decoded twice: as
// generic values (node) and, to keep the order of properties, as raw
// JSON (the raw argument, nil when unknown: then properties are sorted).
type instanceGen struct {
	root any
	raw  []byte
}

func (g *instanceGen) write(buf *bytes.Buffer, node any, raw []byte, depth int) error {
	if depth > maxSchemaDepth {
		return fmt.Errorf("%w: nested deeper than %d (a recursive $ref?)", ErrSchema, maxSchemaDepth)
	}
	s, ok := node.(map[string]any)
	if !ok {
		if b, isBool := node.(bool); isBool && b {
			buf.WriteString("{}") // true accepts anything
			return nil
		}
		return fmt.Errorf("%w: a schema must be an object, got %s", ErrSchema, compact(node))
	}
	if ref, ok := s["$ref"].(string); ok {
		target, err := g.resolve(ref)
		if err != nil {
			return err
		}
		return g.write(buf, target, g.resolveRaw(ref), depth+1)
	}
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		return writeValue(buf, enum[0])
	}
	if c, ok := s["const"]; ok {
		return writeValue(buf, c)
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if bs, ok := s[k].([]any); ok && len(bs) > 0 {
			return g.write(buf, bs[0], rawMember(raw, k, 0), depth+1)
		}
	}
	if all, ok := s["allOf"].([]any); ok && len(all) > 0 {
		merged, err := g.mergeAll(s, all, depth)
		if err != nil {
			return err
		}
		return g.write(buf, merged, nil, depth+1)
	}
	switch schemaType(s) {
	case "object":
		return g.writeObject(buf, s, raw, depth)
	case "array":
		return g.writeArray(buf, s, raw, depth)
	case "string":
		return writeValue(buf, sampleString(s))
	case "integer":
		buf.WriteString(strconv.FormatInt(int64(clamp(s, 1, true)), 10))
	case "number":
		buf.WriteString(strconv.FormatFloat(clamp(s, 1.5, false), 'g', -1, 64))
	case "boolean":
		buf.WriteString("true")
	case "null":
		buf.WriteString("null")
	default:
		return fmt.Errorf("%w: unknown type %s", ErrSchema, compact(s["type"]))
	}
	return nil
}

// schemaType is the type of s: its type, the first of a type list, or
// what its keywords suggest.
func schemaType(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		if len(t) > 0 {
			if f, ok := t[0].(string); ok {
				return f
			}
		}
	}
	if _, ok := s["items"]; ok {
		return "array"
	}
	if _, ok := s["prefixItems"]; ok {
		return "array"
	}
	return "object"
}

func (g *instanceGen) writeObject(buf *bytes.Buffer, s map[string]any, raw []byte, depth int) error {
	props, _ := s["properties"].(map[string]any)
	order := orderedKeys(rawMember(raw, "properties", -1), props)
	names := order
	if req, ok := s["required"].([]any); ok {
		want := map[string]bool{}
		for _, r := range req {
			if n, ok := r.(string); ok {
				want[n] = true
			}
		}
		names = nil
		for _, n := range order {
			if want[n] {
				names = append(names, n)
				delete(want, n)
			}
		}
		for _, r := range req { // required but not described
			if n, ok := r.(string); ok && want[n] {
				names = append(names, n)
				delete(want, n)
			}
		}
	}
	buf.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := writeValue(buf, n); err != nil {
			return err
		}
		buf.WriteByte(':')
		p, ok := props[n]
		if !ok {
			p = map[string]any{}
		}
		if err := g.write(buf, p, rawMember(rawMember(raw, "properties", -1), n, -1), depth+1); err != nil {
			return fmt.Errorf("property %q: %w", n, err)
		}
	}
	buf.WriteByte('}')
	return nil
}

func (g *instanceGen) writeArray(buf *bytes.Buffer, s map[string]any, raw []byte, depth int) error {
	n := 1
	if m, ok := number(s["minItems"]); ok && m > 1 {
		if m > maxSchemaItems {
			return fmt.Errorf("%w: minItems %v is more than %d", ErrSchema, m, maxSchemaItems)
		}
		n = int(m)
	}
	if m, ok := number(s["maxItems"]); ok && m < float64(n) {
		n = max(int(m), 0)
	}
	prefix, _ := s["prefixItems"].([]any)
	items, hasItems := s["items"]
	if _, isList := items.([]any); isList { // draft 4 tuple form
		prefix, hasItems = items.([]any), false
	}
	if !hasItems && len(prefix) > 0 {
		n = max(min(n, len(prefix)), 0)
		if _, ok := number(s["minItems"]); !ok {
			n = len(prefix)
		}
	}
	buf.WriteByte('[')
	for i := range n {
		if i > 0 {
			buf.WriteByte(',')
		}
		var item any = map[string]any{}
		var itemRaw []byte
		switch {
		case i < len(prefix):
			item = prefix[i]
		case hasItems:
			item, itemRaw = items, rawMember(raw, "items", -1)
		}
		if err := g.write(buf, item, itemRaw, depth+1); err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
	}
	buf.WriteByte(']')
	return nil
}

// mergeAll merges s without allOf and its allOf branches ($refs
// resolved): their properties and required lists; the first type wins.
func (g *instanceGen) mergeAll(s map[string]any, all []any, depth int) (map[string]any, error) {
	out := map[string]any{}
	props := map[string]any{}
	var required []any
	hasRequired := false
	parts := append([]any{s}, all...)
	for i, p := range parts {
		m, ok := p.(map[string]any)
		for ok && i > 0 && m["$ref"] != nil {
			ref, _ := m["$ref"].(string)
			t, err := g.resolve(ref)
			if err != nil {
				return nil, err
			}
			m, ok = t.(map[string]any)
			if depth++; depth > maxSchemaDepth {
				return nil, fmt.Errorf("%w: nested deeper than %d", ErrSchema, maxSchemaDepth)
			}
		}
		if !ok {
			continue
		}
		for k, v := range m {
			switch k {
			case "allOf":
			case "properties":
				if pm, ok := v.(map[string]any); ok {
					for pk, pv := range pm {
						props[pk] = pv
					}
				}
			case "required":
				if r, ok := v.([]any); ok {
					required, hasRequired = append(required, r...), true
				}
			default:
				if _, set := out[k]; !set {
					out[k] = v
				}
			}
		}
	}
	if len(props) > 0 {
		out["properties"] = props
	}
	if hasRequired {
		out["required"] = required
	}
	return out, nil
}

// resolve follows a local $ref: "#" or a JSON pointer "#/a/b" into the
// root schema.
func (g *instanceGen) resolve(ref string) (any, error) {
	if ref != "#" && !strings.HasPrefix(ref, "#/") {
		return nil, fmt.Errorf("%w: $ref %q: only local references (#/...) are supported", ErrSchema, ref)
	}
	node := g.root
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#"), "/")[1:] {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		switch n := node.(type) {
		case map[string]any:
			v, ok := n[part]
			if !ok {
				return nil, fmt.Errorf("%w: $ref %q: no %q", ErrSchema, ref, part)
			}
			node = v
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(n) {
				return nil, fmt.Errorf("%w: $ref %q: no item %q", ErrSchema, ref, part)
			}
			node = n[i]
		default:
			return nil, fmt.Errorf("%w: $ref %q: no %q", ErrSchema, ref, part)
		}
	}
	return node, nil
}

// resolveRaw is the raw JSON a local $ref names, nil if unknown.
func (g *instanceGen) resolveRaw(ref string) []byte {
	raw := g.raw
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#"), "/")[1:] {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) == nil {
			raw = obj[part]
			continue
		}
		var list []json.RawMessage
		i, err := strconv.Atoi(part)
		if json.Unmarshal(raw, &list) != nil || err != nil || i < 0 || i >= len(list) {
			return nil
		}
		raw = list[i]
	}
	return raw
}

// number is v as a float64, when it is a JSON number.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	}
	return 0, false
}

// sampleString is a string s accepts as far as format, minLength and
// maxLength go.
func sampleString(s map[string]any) string {
	out := "string"
	switch s["format"] {
	case "date-time":
		out = "2024-01-01T00:00:00Z"
	case "date":
		out = "2024-01-01"
	case "time":
		out = "00:00:00Z"
	case "email":
		out = "user@example.com"
	case "uri", "url":
		out = "https://example.com"
	case "uuid":
		out = "00000000-0000-0000-0000-000000000000"
	case "ipv4":
		out = "127.0.0.1"
	case "ipv6":
		out = "::1"
	case "hostname":
		out = "example.com"
	}
	if m, ok := number(s["minLength"]); ok && int(m) > len(out) && m <= maxSchemaItems {
		out += strings.Repeat("s", int(m)-len(out))
	}
	if m, ok := number(s["maxLength"]); ok && m >= 0 && int(m) < len(out) {
		out = out[:int(m)]
	}
	return out
}

// clamp moves v into s's [minimum, maximum] (exclusive bounds moved past
// by one for integers, by a little for numbers).
func clamp(s map[string]any, v float64, integer bool) float64 {
	step := 0.5
	if integer {
		step = 1
	}
	if m, ok := number(s["minimum"]); ok && v < m {
		v = m
	}
	if m, ok := number(s["exclusiveMinimum"]); ok && v <= m {
		v = m + step
	}
	if m, ok := number(s["maximum"]); ok && v > m {
		v = m
	}
	if m, ok := number(s["exclusiveMaximum"]); ok && v >= m {
		v = m - step
	}
	if integer {
		v = math.Ceil(v)
	}
	return v
}

// rawMember returns the raw JSON of member key of the object raw (i < 0)
// or of item i of its array member key; nil when raw is nil or lacks it.
func rawMember(raw []byte, key string, i int) []byte {
	if raw == nil {
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return nil
	}
	v, ok := obj[key]
	if !ok {
		return nil
	}
	if i < 0 {
		return v
	}
	var list []json.RawMessage
	if json.Unmarshal(v, &list) != nil || i >= len(list) {
		return nil
	}
	return list[i]
}

// orderedKeys returns the keys of props in the order raw (the same
// object as JSON) lists them, or sorted when raw is unknown.
func orderedKeys(raw []byte, props map[string]any) []string {
	var keys []string
	if raw != nil {
		dec := json.NewDecoder(bytes.NewReader(raw))
		if t, err := dec.Token(); err == nil && t == json.Delim('{') {
			seen := map[string]bool{}
			for dec.More() {
				t, err := dec.Token()
				if err != nil {
					break
				}
				k, _ := t.(string)
				var skip json.RawMessage
				if dec.Decode(&skip) != nil {
					break
				}
				if _, ok := props[k]; ok && !seen[k] {
					seen[k] = true
					keys = append(keys, k)
				}
			}
		}
	}
	if len(keys) == len(props) {
		return keys
	}
	keys = keys[:0]
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// writeValue writes v as compact JSON.
func writeValue(buf *bytes.Buffer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSchema, err)
	}
	buf.Write(b)
	return nil
}

// compact is v as JSON, for messages.
func compact(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
