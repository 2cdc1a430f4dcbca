package template

import (
	"strings"
	"testing"
)

// TestDialects checks each dialect switch point. The Python column is
// what jinja2 3.1 renders (checked with python3); the HFJS column is
// @huggingface/jinja 0.5.x behaviour as the gate's unit cases encode it.
func TestDialects(t *testing.T) {
	ctx := NewOrderedMap()
	ctx.Set("xs", []any{int64(0), true, "a"})
	ctx.Set("d", mustDecode(t, `{"k": "v", "n": null, "l": [1, 2.5, false]}`))
	ctx.Set("nothing", nil)
	const pyErr = "<error>"
	tests := []struct {
		name, src, python, hfjs string
	}{
		{"bool", "{{ true }}|{{ false }}", "True|False", "true|false"},
		{"none output", "[{{ none }}][{{ nothing }}]", "[None][None]", "[][]"},
		{"none string", "{{ none | string }}", "None", "null"},
		{"list repr", "{{ ['a', 1, none, true, x] }}", "['a', 1, None, True, Undefined]", `["a", 1, null, true, undefined]`},
		{"dict repr", "{{ d }}", "{'k': 'v', 'n': None, 'l': [1, 2.5, False]}", `{"k": "v", "n": null, "l": [1, 2.5, false]}`},
		{"quote in repr", `{{ ["it's", 'say "hi"'] }}`, `["it's", 'say "hi"']`, `["it's", "say \"hi\""]`},
		{"tilde bool", "{{ 1 ~ true }}", "1True", "1true"},
		{"int plus str", "{{ 1 + 'a' }}", pyErr, "1a"},
		{"str plus list", "{{ 'a' + [1] }}", pyErr, "a[1]"},
		{"str plus none", "{{ 'a' + none }}", pyErr, pyErr},
		{"int plus int", "{{ 1 + 2 }}", "3", "3"},
		{"membership", "{{ 1 in xs }}{{ false in xs }}{{ true in xs }}", "TrueTrueTrue", "falsefalsetrue"},
		{"select length", "{{ xs | select | list | length }}{{ xs | reject | length }}", pyErr, "21"},
		{"items slice", "{{ (d | items)[1:] | length }}", pyErr, "2"},
		{"map index", "[{{ (d.l | map('string'))[0] }}]", "[]", "[1]"},
		{"null literal", "{{ null is none }}", "False", "true"},
		{"null variable wins", "{% set null = 3 %}{{ null }}", "3", "3"},
		{"replace kwargs", `{{ "aa".replace("a", "b", count=1) }}`, pyErr, "ba"},
		{"split kwargs", `{{ "a b".split(maxsplit=0) | length }}`, "1", "1"},
		{"tojson undefined", "{{ [x] | tojson }}", pyErr, "[null]"},
	}
	for _, tc := range tests {
		for _, d := range []Dialect{DialectPython, DialectHFJS} {
			want := tc.python
			if d == DialectHFJS {
				want = tc.hfjs
			}
			t.Run(tc.name+"/"+d.String(), func(t *testing.T) {
				got, err := render(tc.src, ctx, d)
				if err != nil {
					got = pyErr
				}
				if got != want {
					t.Errorf("%s: got %q (err %v), want %q", tc.src, got, err, want)
				}
			})
		}
	}
}

func TestCompileUnknownDialect(t *testing.T) {
	_, err := Compile("x", Options{Dialect: Dialect(7)})
	if err == nil || !strings.Contains(err.Error(), "Dialect(7)") {
		t.Fatalf("Compile with Dialect(7): err = %v", err)
	}
}

func mustDecode(t *testing.T, s string) any {
	t.Helper()
	v, err := DecodeJSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}
