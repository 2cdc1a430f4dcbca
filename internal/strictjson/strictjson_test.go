package strictjson

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

// Wherever a Reader answers, encoding/json gives the same value; where
// encoding/json fails, the Reader does not answer.
func FuzzValuesAreEncodingJSONs(f *testing.F) {
	for _, in := range []string{
		`"plain"`, `"esc \" \\ \/ \b \f \n \r \t \u00e9 \u0000"`, `"\ud83d\ude00"`, `"\ud800"`, "\"\xff\"", `"é✓"`,
		`"tab	in"`, `0`, `-0`, `42`, `4294967295`, `4294967296`, `-7`, `1.5`, `1e3`, `1E-2`, `01`, `1.`, `.5`, `-`,
		`9223372036854775807`, `9223372036854775808`, `1e400`, `true`, `false`, `null`, `nul`, ` 3 `, `[1,2]`, `[]`, `[1,]`,
		`["a","b"]`, `["a",null]`,
	} {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if r := New(in); true {
			v := r.String()
			var w string
			if r.End() && (json.Unmarshal(in, &w) != nil || w != v) {
				t.Errorf("String(%q) = %q, encoding/json %q", in, v, w)
			}
		}
		if r := New(in); true {
			v := r.Uint(32)
			var w uint32
			if r.End() && (json.Unmarshal(in, &w) != nil || uint64(w) != v) {
				t.Errorf("Uint(%q) = %d, encoding/json %d", in, v, w)
			}
		}
		if r := New(in); true {
			v := r.Int(64)
			var w int64
			if r.End() && (json.Unmarshal(in, &w) != nil || w != v) {
				t.Errorf("Int(%q) = %d, encoding/json %d", in, v, w)
			}
		}
		if r := New(in); true {
			v := r.Float()
			var w float64
			if r.End() && (json.Unmarshal(in, &w) != nil || math.Float64bits(w) != math.Float64bits(v)) {
				t.Errorf("Float(%q) = %v, encoding/json %v", in, v, w)
			}
		}
		if r := New(in); true {
			v := r.Bool()
			var w bool
			if r.End() && (json.Unmarshal(in, &w) != nil || w != v) {
				t.Errorf("Bool(%q) = %v, encoding/json %v", in, v, w)
			}
		}
		if r := New(in); true {
			v := r.Uint32s(nil)
			var w []uint32
			if r.End() && (json.Unmarshal(in, &w) != nil || w == nil || !slices.Equal(v, w)) {
				t.Errorf("Uint32s(%q) = %v, encoding/json %v", in, v, w)
			}
		}
		if r := New(in); true {
			v := r.Strings()
			var w []string
			if r.End() && (json.Unmarshal(in, &w) != nil || w == nil || !slices.Equal(v, w)) {
				t.Errorf("Strings(%q) = %q, encoding/json %q", in, v, w)
			}
		}
	})
}

// The subset's edges: what a Reader hands over instead of answering.
func TestOutsideTheSubset(t *testing.T) {
	for _, tc := range []struct {
		in   string
		read func(*Reader)
	}{
		{`"\ud83d\ude00"`, func(r *Reader) { _ = r.String() }},    // a surrogate pair
		{"\"\xff\"", func(r *Reader) { _ = r.String() }},          // invalid UTF-8
		{`"a` + "\x01" + `"`, func(r *Reader) { _ = r.String() }}, // a control byte
		{`-1`, func(r *Reader) { r.Uint(32) }},                    // a sign
		{`4294967296`, func(r *Reader) { r.Uint(32) }},            // too large
		{`1.0`, func(r *Reader) { r.Int(64) }},                    // not an integer
		{`1e400`, func(r *Reader) { r.Float() }},                  // out of range
		{`[1,null]`, func(r *Reader) { r.Uint32s(nil) }},          // null in an array
		{`{"a":1}`, func(r *Reader) { r.Object(func([]byte) { r.Fail() }) }},
		{`{"a\u0062":1}`, func(r *Reader) { r.Object(func([]byte) { r.Uint(32) }) }}, // an escaped key
		{`{"a":1,}`, func(r *Reader) { r.Object(func([]byte) { r.Uint(32) }) }},
		{`1 2`, func(r *Reader) { r.Uint(32) }},
	} {
		r := New([]byte(tc.in))
		tc.read(r)
		if r.End() {
			t.Errorf("%s: read as within the subset", tc.in)
		}
	}
}

// AppendString writes what encoding/json writes, with HTML escaping and
// without.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"plain", "a<b>&\"\\\n\t\b\f\x01\x7f", "é✓\u2028\u2029", "\xff\xfe", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s, true); string(got) != string(want) {
			t.Fatalf("AppendString(%q, html) = %s, encoding/json %s", s, got, want)
		}
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		if got := AppendString(nil, s, false); string(got)+"\n" != b.String() {
			t.Fatalf("AppendString(%q) = %s, encoding/json %s", s, got, b.String())
		}
	})
}
