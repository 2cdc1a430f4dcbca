package respstream

import (
	"encoding/json"
	"testing"
)

// decodeHandshake is json.Unmarshal.
func FuzzDecodeHandshake(f *testing.F) {
	for _, in := range []string{
		`{"subject":"2ad998d0-cc65-4129-87c5-5b0d6a85fec3","stream_type":"response"}`,
		`{"subject":null,"stream_type":"a\nb"}`, `{"subject":"a","subject":"b"}`, `{"Subject":"a"}`,
		`{"subject":"a","window":3}`, `{"subject":1}`, `{}`, `null`, `{"subject":"\ud800"}`,
	} {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var got, want handshake
		err, werr := decodeHandshake(in, &got), json.Unmarshal(in, &want)
		if (err == nil) != (werr == nil) || err == nil && got != want {
			t.Fatalf("%q: %+v (%v), encoding/json %+v (%v)", in, got, err, want, werr)
		}
	})
}
