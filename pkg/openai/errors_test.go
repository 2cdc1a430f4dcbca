package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestValidationErrorsNameTheParam(t *testing.T) {
	tests := []struct {
		name, body, param string
	}{
		{"malformed JSON", `{"model":`, ""},
		{"wrong type", chatBody(`"temperature":"hot"`), "temperature"},
		{"wrong type nested", chatBody(`"nvext":{"backend_instance_id":"a"}`), "nvext.backend_instance_id"},
		{"custom unmarshaller", `{"model":"m","messages":[{"role":"user","content":5}]}`, "messages.content"},
		{"one unknown field", chatBody(`"foo":1`), "foo"},
		{"two unknown fields", chatBody(`"foo":1,"bar":2`), ""},
		{"unknown nvext key", chatBody(`"nvext":{"zzz":1}`), "nvext.zzz"},
		{"range", chatBody(`"temperature":5`), "temperature"},
		{"max tokens", chatBody(`"max_completion_tokens":0`), "max_completion_tokens"},
		{"empty model", `{"model":" ","messages":[{"role":"user","content":"hi"}]}`, "model"},
		{"unknown role", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"robot"}]}`, "messages[1].role"},
		{"stream_options", chatBody(`"stream_options":{"include_usage":true}`), "stream_options"},
		{"response_format", chatBody(`"response_format":{"type":"yaml"}`), "response_format.type"},
		{"two constraints", chatBody(`"guided_json":{},"guided_regex":"a"`), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeChat([]byte(tc.body), DecodeOptions{})
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error = %v (%T), want *ValidationError", err, err)
			}
			if ve.Param != tc.param {
				t.Errorf("param = %q, want %q (message %q)", ve.Param, tc.param, ve.Message)
			}
		})
	}
}

func TestErrorBodyIsNested(t *testing.T) {
	tests := []struct {
		status       int
		msg, param   string
		want         string
		wantStatusOK bool
	}{
		{400, "Validation: temperature must be between 0 and 2, got 5", "temperature",
			`{"error":{"message":"Validation: temperature must be between 0 and 2, got 5","type":"invalid_request_error","param":"temperature","code":400}}`, true},
		{404, "Model not found: <x>", "",
			`{"error":{"message":"Model not found: <x>","type":"not_found_error","param":null,"code":404}}`, true},
		{499, "Request cancelled", "", `{"error":{"message":"Request cancelled","type":"client_closed_request","param":null,"code":499}}`, true},
		{529, "busy", "", `{"error":{"message":"busy","type":"overloaded_error","param":null,"code":529}}`, true},
	}
	for _, tc := range tests {
		body := NewErrorBody(tc.status, tc.msg, tc.param)
		var buf bytes.Buffer
		if err := Encode(&buf, body); err != nil {
			t.Fatal(err)
		}
		if buf.String() != tc.want {
			t.Errorf("NewErrorBody(%d, %q, %q) = %s\n want %s", tc.status, tc.msg, tc.param, buf.String(), tc.want)
		}
		var back ErrorBody
		if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(body, back); diff != "" {
			t.Errorf("round trip (-sent +decoded):\n%s", diff)
		}
		if s, ok := back.Error.Status(); s != tc.status || !ok {
			t.Errorf("Status() = %d, %v", s, ok)
		}
	}
	key := ErrorInfo{Code: json.RawMessage(`"invalid_api_key"`)}
	if _, ok := key.Status(); ok {
		t.Errorf("a string code reads as a status")
	}
}

func TestSSEErrorEventCarriesTheSameBody(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSSEError(&buf, NewErrorBody(http.StatusInternalServerError, "engine died\nat step 3", "")); err != nil {
		t.Fatal(err)
	}
	want := "event: error\n: engine died at step 3\n" +
		`data: {"error":{"message":"engine died\nat step 3","type":"server_error","param":null,"code":500}}` + "\n\n"
	if buf.String() != want {
		t.Errorf("event:\n%q\nwant\n%q", buf.String(), want)
	}
}

func TestDecodeErrorBodyReadsEveryForm(t *testing.T) {
	param := "temperature"
	tests := []struct {
		body string
		want ErrorInfo
		ok   bool
	}{
		{`{"error":{"message":"m","type":"Bad Request","param":"temperature","code":400}}`,
			ErrorInfo{Message: "m", Type: "Bad Request", Param: &param, Code: json.RawMessage(`400`)}, true},
		{`{"error":{"message":"k","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			ErrorInfo{Message: "k", Type: "invalid_request_error", Code: json.RawMessage(`"invalid_api_key"`)}, true},
		{`{"message":"flat","type":"Not Found","code":404}`,
			ErrorInfo{Message: "flat", Type: "Not Found", Code: json.RawMessage(`404`)}, true},
		{`{"error":"old"}`, ErrorInfo{Message: "old"}, true},
		{`{"error":{}}`, ErrorInfo{}, false},
		{`not json`, ErrorInfo{}, false},
		{`{"choices":[]}`, ErrorInfo{}, false},
	}
	for _, tc := range tests {
		got, ok := DecodeErrorBody([]byte(tc.body))
		if ok != tc.ok {
			t.Errorf("DecodeErrorBody(%s) ok = %v, want %v", tc.body, ok, tc.ok)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("DecodeErrorBody(%s) (-want +got):\n%s", tc.body, diff)
		}
	}
}
