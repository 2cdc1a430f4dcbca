package toolcall_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamo-go/dynamo/pkg/preprocessor/toolcall"
)

func TestParseRequired(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		calls []toolcall.Call // nil: an ErrMalformed error
	}{
		{"one call", `[{"name": "get_weather", "parameters": {"city": "Paris"}}]`,
			[]toolcall.Call{call("get_weather", weatherParis)}},
		{"two calls, spaces", " [ {\"name\": \"a\", \"parameters\": {\"x\": [1, {\"y\": \"ü\"}]}},\n {\"name\": \"b\", \"parameters\": {}} ] ",
			[]toolcall.Call{call("a", `{"x":[1,{"y":"ü"}]}`), call("b", "{}")}},
		{"parameters missing", `[{"name": "get_time"}]`, []toolcall.Call{call("get_time", "{}")}},
		{"parameters null", `[{"name": "get_time", "parameters": null}]`, []toolcall.Call{call("get_time", "{}")}},
		{"empty array", `[]`, nil},
		{"not JSON", `get_weather(city="Paris")`, nil},
		{"truncated", `[{"name": "get_weather", "parameters": {"city": "Par`, nil},
		{"an object, not an array", `{"name": "get_weather", "parameters": {}}`, nil},
		{"no name", `[{"parameters": {}}]`, nil},
		{"parameters not an object", `[{"name": "f", "parameters": [1]}]`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls, err := toolcall.ParseRequired(tt.text)
			if tt.calls == nil {
				if !errors.Is(err, toolcall.ErrMalformed) {
					t.Fatalf("err = %v, want ErrMalformed", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.calls, calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}
