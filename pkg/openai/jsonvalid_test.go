package openai

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

var jsonCases = []string{
	``, ` `, `null`, ` true `, `false`, `nul`, `nulll`, `tru`, `0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`,
	`1e5`, `1E+5`, `1e-05`, `1e`, `1e+`, `-1.5e3x`, `1x`, `123456789012345678901234567890`, `1 2`,
	`""`, `"a"`, `"\u00e9\ud83d\ude00"`, `"\u12"`, `"\u12g4"`, `"\x"`, `"\/\b\f\n\r\t\"\\"`, "\"\x01\"",
	"\"\x7f\"", "\"\xff\"", "\"tab\there\"", `"unterminated`, `"ends in \"`, `"12345678\"12345678"`,
	`"lone \ud800 \udc00 \ud800\u0041 \udbff\udfff \ud800\ud800\udc00 \u0000"`, `"\\\\\"\\"`,
	`{}`, `{ }`, `{"a":1}`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `{"a":1 "b":2}`, `{"a":[1,{"b":null}]}`,
	`[]`, `[ ]`, `[1,]`, `[,1]`, `[1 2]`, `[[[]]]`, `[1]]`, `{"a":1}}`, `{"a":1} {}`, "[1]\n\t\r ",
	"\v1", `{"a":"` + strings.Repeat("abcdefgh", 9) + `"}`, `"` + strings.Repeat("é", 20) + `"`,
	`{"k\"ey":["v\\",{"x":"\""}],"n":-1.5e3}`,
	`[{"role":"user","content":"a\nb"},{"role":"assistant","content":null,"tool_calls":[{"id":"1"}]}]`,
	`[{"r\u006fle":"user","content":[{"type":"text","text":"x"}],"x":[1,{"y":true}]}]`,
}

// validJSON agrees with json.Valid, at the nesting limit too.
func TestValidJSONMatchesEncodingJSON(t *testing.T) {
	cases := append([]string(nil), jsonCases...)
	for _, d := range []int{maxJSONDepth - 1, maxJSONDepth, maxJSONDepth + 1} {
		cases = append(cases, strings.Repeat("[", d)+strings.Repeat("]", d),
			strings.Repeat(`{"a":`, d)+"1"+strings.Repeat("}", d))
	}
	for _, in := range cases {
		checkJSONText(t, []byte(in))
	}
}

// FuzzValidJSON checks validJSON against json.Valid, and jsonText's
// reading of valid documents against encoding/json's.
func FuzzValidJSON(f *testing.F) {
	for _, s := range jsonCases {
		f.Add([]byte(s))
	}
	f.Fuzz(checkJSONText)
}

// checkJSONText checks validJSON(b) against json.Valid and, for a valid
// UTF-8 document, that skip takes the whole value and that str reads a
// string as encoding/json does. On any input jsonText must not panic.
func BenchmarkValidJSON(b *testing.B) {
	body := longConversation()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if !validJSON(body) {
			b.Fatal("invalid")
		}
	}
}

func checkJSONText(t *testing.T, b []byte) {
	_, _ = (&jsonText{b: b}).skip()
	_, _ = (&jsonText{b: b}).str()
	_, _ = readMessages(&jsonText{b: b})
	valid := validJSON(b)
	if want := json.Valid(b); valid != want {
		t.Fatalf("validJSON(%.60q) = %v, json.Valid %v", b, valid, want)
	}
	if !valid || !utf8.Valid(b) {
		return
	}
	tx := &jsonText{b: b}
	v, err := tx.skip()
	if err != nil || !bytes.Equal(v, bytes.TrimSpace(b)) {
		t.Fatalf("skip(%.60q) = %q, %v", b, v, err)
	}
	if v[0] != '"' {
		return
	}
	var want string
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	tx = &jsonText{b: b}
	if got, err := tx.str(); err != nil || got != want {
		t.Fatalf("str(%.60q) = %q, %v; encoding/json %q", b, got, err, want)
	}
}
