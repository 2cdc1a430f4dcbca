package tcpplane

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/plane"
)

func TestAppendHeadersIsJSON(t *testing.T) {
	tests := []map[string]string{
		{"a": "b"},
		{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "x-request-id": "r1"},
		{`q"uo\te`: "line\nbreak\r\ttab\x00\x1f", "<html>&": "ünïcødé ✓ 😀"},
		{"": ""},
	}
	for _, h := range tests {
		b := appendHeaders(nil, h)
		var got map[string]string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		if diff := cmp.Diff(h, got); diff != "" {
			t.Fatalf("(-want +got):\n%s", diff)
		}
	}
	// Invalid UTF-8 becomes U+FFFD, as with encoding/json.
	var got map[string]string
	if err := json.Unmarshal(appendHeaders(nil, map[string]string{"k": "a\xffb"}), &got); err != nil {
		t.Fatal(err)
	}
	if got["k"] != "a\ufffdb" {
		t.Fatalf("got %q", got["k"])
	}
}

// headerShapes are headers sections as the runtime writes them and at the
// edges of what decodeHeaders reads without reflection.
var headerShapes = []string{
	`{"x-request-id":"4eb8eef9-6720","traceparent":"00-5a4f5fceeb0601ca6df8b5033b10c025-f31e74c2a5cc2727-00"}`,
	`{"q\"uo\\te":"line\nbreak\r\ttab\u0000\u001f","<html>&":"ünïcødé ✓ 😀"}`,
	`{"a":"\ud83d\ude00","b":"\ud800"}`, `{"a":null}`, `{"a":1}`, `{"a":"x","a":"y"}`, `{ }`, `null`, `{"a":"b"} x`,
	"{\"k\":\"a\xffb\"}",
}

// decodeHeaders gives json.Unmarshal's map, or an error where it does.
func FuzzDecodeHeaders(f *testing.F) {
	for _, in := range headerShapes {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 || string(in) == "{}" {
			return // nil by decodeHeaders' own rule
		}
		got, err := decodeHeaders(in)
		var want map[string]string
		werr := json.Unmarshal(in, &want)
		if (err == nil) != (werr == nil) {
			t.Fatalf("%q: error %v, encoding/json %v", in, err, werr)
		}
		if err == nil && !cmp.Equal(got, want) {
			t.Fatalf("%q: %v, encoding/json %v", in, got, want)
		}
	})
}

// FuzzServerConn feeds arbitrary bytes to a server connection. It must not
// panic, every ack it writes must be well formed, and it must write at most
// one ack per frame it could have read.
func FuzzServerConn(f *testing.F) {
	f.Add(rawFrame("ep", "", []byte("payload")))
	f.Add(rawFrame("ep", `{"a":"b"}`, nil))
	f.Add(append(rawFrame("nope", "{}", nil), rawFrame("ep", "[", []byte("x"))...))
	f.Add(rawFrame("ep", "", make([]byte, 300)))
	f.Add([]byte{0, 2, 'e'})
	s := &Server{maxSize: 256, handlers: map[string]plane.Handler{
		"ep": func(_ map[string]string, p []byte) error {
			if len(p) == 3 {
				return errors.New("three")
			}
			return nil
		},
	}}
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		rw := struct {
			io.Reader
			io.Writer
		}{bytes.NewReader(in), &out}
		newServerConn(s, rw).serve()
		acks := out.Bytes()
		n := 0
		for len(acks) > 0 {
			if len(acks) < 4 {
				t.Fatalf("truncated ack length: %x", acks)
			}
			size := int(binary.BigEndian.Uint32(acks))
			if len(acks) < 4+size {
				t.Fatalf("truncated ack text")
			}
			acks = acks[4+size:]
			n++
		}
		if max := len(in) / 8; n > max { // a frame is at least 8 bytes
			t.Fatalf("%d acks for %d input bytes", n, len(in))
		}
	})
}
