package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestChatGuidedDecoding(t *testing.T) {
	tests := []struct {
		name, extra string
		want        *GuidedDecoding
	}{
		{name: "none", want: nil},
		{name: "text", extra: `"response_format":{"type":"text"}`, want: nil},
		{name: "modifiers only", extra: `"guided_decoding_backend":"xgrammar","guided_whitespace_pattern":" "`, want: nil},
		{name: "empty choice", extra: `"guided_choice":[]`, want: nil},
		{name: "json_object", extra: `"response_format":{"type":"json_object"}`,
			want: &GuidedDecoding{JSON: json.RawMessage(`{"type":"object"}`)}},
		{name: "json_schema", extra: `"response_format":{"type":"json_schema","json_schema":{"name":"w","schema":{"type":"string"},"strict":true}}`,
			want: &GuidedDecoding{JSON: json.RawMessage(`{"type":"string"}`)}},
		{name: "json_schema true", extra: `"response_format":{"type":"json_schema","json_schema":{"name":"w","schema":true}}`,
			want: &GuidedDecoding{JSON: json.RawMessage(`true`)}},
		{name: "guided_json wins", extra: `"guided_json":{"type":"array"},"response_format":{"type":"json_object"}`,
			want: &GuidedDecoding{JSON: json.RawMessage(`{"type":"array"}`)}},
		{name: "guided_json string", extra: `"guided_json":"{\"type\":\"object\"}"`,
			want: &GuidedDecoding{JSON: json.RawMessage(`"{\"type\":\"object\"}"`)}},
		{name: "json with modifiers", extra: `"response_format":{"type":"json_object"},"guided_decoding_backend":"xgrammar","guided_whitespace_pattern":"[ ]?"`,
			want: &GuidedDecoding{JSON: json.RawMessage(`{"type":"object"}`), Backend: "xgrammar", WhitespacePattern: "[ ]?"}},
		{name: "regex", extra: `"guided_regex":"[a-z]+"`, want: &GuidedDecoding{Regex: "[a-z]+"}},
		{name: "choice", extra: `"guided_choice":["yes","no"]`, want: &GuidedDecoding{Choice: []string{"yes", "no"}}},
		{name: "grammar", extra: `"guided_grammar":"root ::= \"a\""`, want: &GuidedDecoding{Grammar: `root ::= "a"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := DecodeChat([]byte(chatBody(tc.extra)), DecodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.GuidedDecoding()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("guided decoding (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGuidedDecodingErrors(t *testing.T) {
	tests := []struct{ name, extra, exact string }{
		{"schema missing", `"response_format":{"type":"json_schema","json_schema":{"name":"w"}}`,
			"Validation: `response_format.json_schema.schema` is required when `response_format.type` is `json_schema`"},
		{"schema null", `"response_format":{"type":"json_schema","json_schema":{"name":"w","schema":null}}`,
			"Validation: `response_format.json_schema.schema` is required when `response_format.type` is `json_schema`"},
		{"schema false", `"response_format":{"type":"json_schema","json_schema":{"name":"w","schema":false}}`,
			"Validation: `response_format.json_schema.schema` cannot be false because it is unsatisfiable"},
		{"name empty", `"response_format":{"type":"json_schema","json_schema":{"schema":{}}}`,
			"Validation: `response_format.json_schema.name` must not be empty"},
		{"json_schema missing", `"response_format":{"type":"json_schema"}`,
			"Validation: `response_format.json_schema` is required when `response_format.type` is `json_schema`"},
		{"unknown type", `"response_format":{"type":"yaml"}`,
			"Validation: `response_format.type` must be one of `text`, `json_object`, `json_schema`, got `yaml`"},
		{"conflict", `"guided_json":{},"guided_regex":"a","guided_grammar":"g"`,
			"Validation: only one guided-decoding constraint can be set; received: json, regex, grammar"},
		{"conflict with response_format", `"response_format":{"type":"json_object"},"guided_choice":["a"]`,
			"Validation: only one guided-decoding constraint can be set; received: json, choice"},
		{"grammar too deep", `"guided_grammar":"` + strings.Repeat("(", 501) + `"`,
			"Validation: guided_grammar exceeds maximum nesting depth of 500 (got 501)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeChat([]byte(chatBody(tc.extra)), DecodeOptions{})
			checkValidation(t, err, tc.exact, "")
		})
	}
}

func TestCompletionGuidedDecoding(t *testing.T) {
	r, err := DecodeCompletion([]byte(completionBody(`"guided_choice":["a","b"],"guided_decoding_backend":"outlines"`)), DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.GuidedDecoding()
	if err != nil {
		t.Fatal(err)
	}
	want := &GuidedDecoding{Choice: []string{"a", "b"}, Backend: "outlines"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("guided decoding (-want +got):\n%s", diff)
	}
	if _, err := DecodeCompletion([]byte(completionBody(`"response_format":{"type":"json_object"}`)), DecodeOptions{}); err == nil {
		t.Error("completions accepted response_format")
	}
}

func TestGuidedDecodingWire(t *testing.T) {
	g := GuidedDecoding{JSON: json.RawMessage(`{"type":"object"}`), Regex: "r", Choice: []string{"c"}, Grammar: "g",
		Backend: "b", WhitespacePattern: "w", StructuralTag: json.RawMessage(`{}`)}
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"json":{"type":"object"},"regex":"r","choice":["c"],"grammar":"g","backend":"b","whitespace_pattern":"w","structural_tag":{}}`
	if string(b) != want {
		t.Errorf("wire = %s\n want %s", b, want)
	}
	if b, _ := json.Marshal(GuidedDecoding{Regex: "x"}); string(b) != `{"regex":"x"}` {
		t.Errorf("omitempty wire = %s", b)
	}
}
