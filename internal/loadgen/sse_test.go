package loadgen

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestSSEReaderSplitsEvents(t *testing.T) {
	long := strings.Repeat("x", 20000) // longer than the read buffer
	in := "event: formatted_prompt\ndata: {\"a\":1}\n\n" +
		": a comment\r\ndata: one\r\n\r\n" +
		"data: two\ndata: lines\n\n" +
		"event: ping\n\n" + // no data: dropped
		"data: " + long + "\n\n" +
		"event: error\n: boom\ndata: {\"error\":{\"message\":\"boom\"}}\n\n" +
		"data: tail" // cut without a blank line
	r := newSSEReader(strings.NewReader(in))
	want := []struct{ name, data string }{
		{"formatted_prompt", `{"a":1}`},
		{"", "one"},
		{"", "two\nlines"},
		{"", long},
		{"error", `{"error":{"message":"boom"}}`},
	}
	for i, w := range want {
		name, data, err := r.next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if name != w.name || string(data) != w.data {
			t.Fatalf("event %d = (%q, %.40q), want (%q, %.40q)", i, name, data, w.name, w.data)
		}
	}
	if _, _, err := r.next(); !errors.Is(err, errNoDone) {
		t.Fatalf("cut stream: err = %v, want errNoDone", err)
	}
}

func TestSSEReaderPassesReadErrors(t *testing.T) {
	r := newSSEReader(io.MultiReader(strings.NewReader("data: x\n"), errReader{}))
	if _, _, err := r.next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

func TestErrorText(t *testing.T) {
	for in, want := range map[string]string{
		`{"error":{"message":"nested","type":"Bad Request","code":400}}`:                                   "nested",
		`{"error":{"message":"key","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`: "key",
		`{"error":"plain string"}`:                 "plain string",
		`{"message":"flat","type":"x","code":500}`: "flat",
		"  not json  ":                             "not json",
	} {
		if got := errorText([]byte(in)); got != want {
			t.Errorf("errorText(%s) = %q, want %q", in, got, want)
		}
	}
}
