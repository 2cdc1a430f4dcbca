package template

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// OrderedMap is a string-keyed mapping that keeps insertion order, like a
// Python dict. Tool schemas and other JSON objects passed to templates must
// keep their key order, so contexts are built from OrderedMaps.
type OrderedMap struct {
	keys []string
	m    map[string]any
}

// NewOrderedMap returns an empty map.
func NewOrderedMap() *OrderedMap { return &OrderedMap{m: map[string]any{}} }

// Len returns the number of keys.
func (o *OrderedMap) Len() int { return len(o.keys) }

// Keys returns the keys in insertion order. The slice must not be modified.
func (o *OrderedMap) Keys() []string { return o.keys }

// Get returns the value for k.
func (o *OrderedMap) Get(k string) (any, bool) { v, ok := o.m[k]; return v, ok }

// Set sets k to v; a new key goes last, an existing key keeps its position.
func (o *OrderedMap) Set(k string, v any) {
	if o.m == nil {
		o.m = map[string]any{}
	}
	if _, ok := o.m[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.m[k] = v
}

// Delete removes k.
func (o *OrderedMap) Delete(k string) {
	if _, ok := o.m[k]; !ok {
		return
	}
	delete(o.m, k)
	for i, kk := range o.keys {
		if kk == k {
			o.keys = append(o.keys[:i:i], o.keys[i+1:]...)
			break
		}
	}
}

// UnmarshalJSON decodes a JSON object keeping key order. Nested objects
// become *OrderedMap, arrays []any, integers int64, other numbers float64.
func (o *OrderedMap) UnmarshalJSON(b []byte) error {
	v, err := DecodeJSON(b)
	if err != nil {
		return err
	}
	m, ok := v.(*OrderedMap)
	if !ok {
		return fmt.Errorf("template: JSON value is %T, not an object", v)
	}
	*o = *m
	return nil
}

// MarshalJSON encodes the map as transformers' tojson would with compact
// separators; key order is kept.
func (o *OrderedMap) MarshalJSON() ([]byte, error) {
	var sb strings.Builder
	if err := writeJSON(&sb, o, jsonOpts{itemSep: ",", keySep: ":"}, 0); err != nil {
		return nil, err
	}
	return []byte(sb.String()), nil
}

// DecodeJSON decodes any JSON value into template values: objects become
// *OrderedMap, arrays []any, integers int64, other numbers float64,
// null nil.
func DecodeJSON(b []byte) (any, error) {
	if s, ok := plainString(b); ok {
		return s, nil // a message's role, say: no decoder needed
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, fmt.Errorf("template: decode JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("template: decode JSON: trailing data")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := NewOrderedMap()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				m.Set(k, v)
			}
			_, err := dec.Token()
			return m, err
		case '[':
			l := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				l = append(l, v)
			}
			_, err := dec.Token()
			return l, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case json.Number:
		s := string(t)
		if !strings.ContainsAny(s, ".eE") {
			if i, err := t.Int64(); err == nil {
				return i, nil
			}
		}
		f, err := t.Float64()
		return f, err
	default:
		return t, nil // string, bool, nil
	}
}

// plainString returns the string b holds when b is exactly a JSON string
// without escapes or control bytes whose bytes are valid UTF-8: what a
// decoder would return for it.
func plainString(b []byte) (string, bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", false
	}
	in := b[1 : len(b)-1]
	for _, c := range in {
		if c == '"' || c == '\\' || c < 0x20 {
			return "", false
		}
	}
	if !utf8.Valid(in) {
		return "", false
	}
	return string(in), true
}
