package mocker

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestSchemaInstance(t *testing.T) {
	weather := `{"type":"object","properties":{"location":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]},"days":{"type":"integer","minimum":3}},"required":["location","unit"]}`
	tests := []struct {
		name, schema, want string
	}{
		{"string", `{"type":"string"}`, `"string"`},
		{"integer", `{"type":"integer"}`, `1`},
		{"integer minimum", `{"type":"integer","minimum":5,"maximum":9}`, `5`},
		{"integer exclusive maximum", `{"type":"integer","exclusiveMaximum":0}`, `-1`},
		{"number", `{"type":"number"}`, `1.5`},
		{"number maximum", `{"type":"number","maximum":1}`, `1`},
		{"boolean", `{"type":"boolean"}`, `true`},
		{"null", `{"type":"null"}`, `null`},
		{"type list", `{"type":["integer","null"]}`, `1`},
		{"enum first", `{"type":"string","enum":["b","a"]}`, `"b"`},
		{"enum keeps digits", `{"enum":[12345678901234567890]}`, `12345678901234567890`},
		{"const", `{"const":{"k":[1,2]}}`, `{"k":[1,2]}`},
		{"anyOf first", `{"anyOf":[{"type":"integer"},{"type":"string"}]}`, `1`},
		{"oneOf first", `{"oneOf":[{"type":"boolean"},{"type":"string"}]}`, `true`},
		{"object all properties in order", `{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"}}}`, `{"z":"string","a":1}`},
		{"object required only", weather, `{"location":"string","unit":"celsius"}`},
		{"object required not described", `{"type":"object","required":["x"]}`, `{"x":{}}`},
		{"empty object", `{"type":"object"}`, `{}`},
		{"no type", `{}`, `{}`},
		{"true schema", `true`, `{}`},
		{"array one item", `{"type":"array","items":{"type":"integer"}}`, `[1]`},
		{"array minItems", `{"type":"array","minItems":3,"items":{"type":"boolean"}}`, `[true,true,true]`},
		{"array maxItems 0", `{"type":"array","maxItems":0,"items":{"type":"boolean"}}`, `[]`},
		{"array without type", `{"items":{"type":"null"}}`, `[null]`},
		{"prefixItems", `{"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}]}`, `[1,"string"]`},
		{"string formats", `{"type":"object","properties":{"d":{"type":"string","format":"date-time"},"e":{"type":"string","format":"email"},"u":{"type":"string","format":"uuid"}}}`,
			`{"d":"2024-01-01T00:00:00Z","e":"user@example.com","u":"00000000-0000-0000-0000-000000000000"}`},
		{"string lengths", `{"type":"array","prefixItems":[{"type":"string","minLength":8},{"type":"string","maxLength":3}]}`, `["stringss","str"]`},
		{"ref to $defs", `{"type":"object","properties":{"p":{"$ref":"#/$defs/point"}},"$defs":{"point":{"type":"object","properties":{"y":{"type":"number"},"x":{"type":"number"}}}}}`,
			`{"p":{"y":1.5,"x":1.5}}`},
		{"ref to definitions", `{"$ref":"#/definitions/a","definitions":{"a":{"type":"array","items":{"$ref":"#/definitions/b"}},"b":{"const":"b"}}}`, `["b"]`},
		{"allOf merged", `{"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},{"properties":{"b":{"type":"boolean"}},"required":["b"]}]}`, `{"a":1,"b":true}`},
		{"schema in a string", `"{\"type\":\"array\",\"minItems\":2,\"items\":{\"type\":\"integer\"}}"`, `[1,1]`},
		// What the frontend sends for tool_choice "required".
		{"tool_choice required", `{"type":"array","minItems":1,"items":{"anyOf":[{"type":"object","properties":{"name":{"type":"string","enum":["get_weather"]},"parameters":` + weather + `},"required":["name","parameters"]},{"type":"object","properties":{"name":{"type":"string","enum":["other"]},"parameters":{}},"required":["name","parameters"]}]}}`,
			`[{"name":"get_weather","parameters":{"location":"string","unit":"celsius"}}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SchemaInstance([]byte(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("instance of %s\n got %s\nwant %s", tc.schema, got, tc.want)
			}
			if !json.Valid(got) {
				t.Errorf("%s is not JSON", got)
			}
			again, _ := SchemaInstance([]byte(tc.schema))
			if string(again) != string(got) {
				t.Errorf("not deterministic: %s then %s", got, again)
			}
			if ok, err := SchemaAccepts([]byte(tc.schema), got); !ok || err != nil {
				t.Errorf("SchemaAccepts(%s, %s) = %v, %v: an instance must be accepted", tc.schema, got, ok, err)
			}
		})
	}
}

func TestSchemaAccepts(t *testing.T) {
	weather := `{"type":"object","properties":{"city":{"type":"string","minLength":2},"unit":{"enum":["celsius","fahrenheit"]},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["city"],"additionalProperties":false}`
	required := `{"type":"array","minItems":1,"maxItems":1,"items":{"anyOf":[{"type":"object","properties":{"name":{"type":"string","enum":["get_weather"]},"parameters":` + weather + `},"required":["name","parameters"]}]}}`
	tests := []struct {
		schema, value string
		want          bool
	}{
		{weather, `{"city":"Oslo","unit":"celsius","days":3}`, true},
		{weather, `{"city":"Oslo"}`, true},
		{weather, `{"unit":"celsius"}`, false},              // required city
		{weather, `{"city":"O"}`, false},                    // minLength
		{weather, `{"city":"Oslo","unit":"kelvin"}`, false}, // enum
		{weather, `{"city":"Oslo","days":2.5}`, false},      // integer
		{weather, `{"city":"Oslo","days":9}`, false},        // maximum
		{weather, `{"city":"Oslo","wind":true}`, false},     // additionalProperties
		{weather, `["Oslo"]`, false},                        // type
		{weather, `{"city":"Oslo"} trailing`, false},        // not one JSON value
		{weather, `<tool_call>`, false},                     // not JSON
		{required, `[{"name":"get_weather","parameters":{"city":"Oslo"}}]`, true},
		{required, `[{"name":"get_time","parameters":{}}]`, false},
		{required, `[]`, false},
		{required, `[{"name":"get_weather","parameters":{"city":"Oslo"}},{"name":"get_weather","parameters":{"city":"Lima"}}]`, false},
		{`{"oneOf":[{"type":"integer"},{"type":"number"}]}`, `1`, false}, // both match
		{`{"allOf":[{"minimum":1},{"maximum":2}]}`, `3`, false},
		{`{"type":"array","prefixItems":[{"type":"integer"}],"items":{"type":"string"}}`, `[1,"a","b"]`, true},
		{`{"const":{"k":[1,2]}}`, `{"k":[1,2.0]}`, false},
		{`false`, `1`, false},
		{`{"$ref":"#/$defs/a","$defs":{"a":{"type":"boolean"}}}`, `true`, true},
	}
	for _, tc := range tests {
		got, err := SchemaAccepts([]byte(tc.schema), []byte(tc.value))
		if err != nil || got != tc.want {
			t.Errorf("SchemaAccepts(%s, %s) = %v, %v; want %v", tc.schema, tc.value, got, err, tc.want)
		}
	}
	if _, err := SchemaAccepts([]byte(`{"$ref":"#/$defs/missing"}`), []byte(`1`)); !errors.Is(err, ErrSchema) {
		t.Errorf("dangling $ref: %v, want ErrSchema", err)
	}
	for _, tc := range []struct {
		guided, text   string
		accepted, able bool
	}{
		{`{"json":` + weather + `}`, `{"city":"Oslo"}`, true, true},
		{`{"json":` + weather + `}`, `It is sunny.`, false, true},
		{`{"choice":["yes","no"]}`, `no`, true, true},
		{`{"choice":["yes","no"]}`, `maybe`, false, true},
		{`{"regex":"[a-z]+"}`, `abc`, false, false},
		{``, `abc`, false, false},
	} {
		accepted, able, err := GuidedAccepts(json.RawMessage(tc.guided), tc.text)
		if err != nil || accepted != tc.accepted || able != tc.able {
			t.Errorf("GuidedAccepts(%s, %q) = %v, %v, %v; want %v, %v", tc.guided, tc.text, accepted, able, err, tc.accepted, tc.able)
		}
	}
}

func TestSchemaInstanceErrors(t *testing.T) {
	for _, schema := range []string{
		`{"type":"object"`,                   // not JSON
		`{"type":"tuple"}`,                   // unknown type
		`{"$ref":"https://example.com/s"}`,   // remote reference
		`{"$ref":"#/$defs/missing"}`,         // dangling reference
		`{"$ref":"#"}`,                       // endless recursion
		`{"type":"array","minItems":100000}`, // too big
		`[1]`,                                // not a schema
	} {
		if got, err := SchemaInstance([]byte(schema)); !errors.Is(err, ErrSchema) {
			t.Errorf("SchemaInstance(%s) = %s, %v; want ErrSchema", schema, got, err)
		}
	}
}

func TestGuidedText(t *testing.T) {
	for _, tc := range []struct {
		guided, want string
		ok           bool
	}{
		{`{"json":{"type":"object","properties":{"a":{"type":"boolean"}}}}`, `{"a":true}`, true},
		{`{"json":"{\"type\":\"integer\"}","backend":"xgrammar"}`, `1`, true},
		{`{"choice":["yes","no"]}`, `yes`, true},
		{`{"regex":"[a-z]+"}`, ``, false},
		{``, ``, false},
		{`null`, ``, false},
	} {
		got, ok, err := GuidedText(json.RawMessage(tc.guided))
		if err != nil || ok != tc.ok || got != tc.want {
			t.Errorf("GuidedText(%s) = %q, %v, %v; want %q, %v", tc.guided, got, ok, err, tc.want, tc.ok)
		}
	}
	if _, _, err := GuidedText(json.RawMessage(`{"json":{"type":"nope"}}`)); !errors.Is(err, ErrSchema) {
		t.Errorf("bad schema: %v, want ErrSchema", err)
	}
}
