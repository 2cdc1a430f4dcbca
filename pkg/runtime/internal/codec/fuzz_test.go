package codec

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzReadMessage feeds arbitrary bytes to ReadMessage and Decode. Neither
// may panic, and any message that decodes must re-encode to a frame that
// decodes to the same message.
func FuzzReadMessage(f *testing.F) {
	for _, m := range []Message{
		{Header: []byte(`{"subject":"abc","stream_type":"response"}`)}, // header-only
		{Data: []byte(`{"data":1,"complete_final":false}`)},            // data-only
		{Header: []byte(`{"id":"x"}`), Data: []byte("body")},           // both
		{}, // empty
	} {
		f.Add(AppendMessage(nil, m))
	}
	unchecked := AppendMessage(nil, Message{Header: []byte("h"), Data: []byte("d")})
	copy(unchecked[16:24], make([]byte, 8))
	f.Add(unchecked)
	f.Add([]byte{0, 0, 0})

	const limit = 1 << 20
	eq := cmpopts.EquateEmpty()
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ReadMessage(bytes.NewReader(b), limit)
		if err == nil {
			again, err := Decode(AppendMessage(nil, m), limit)
			if err != nil {
				t.Fatalf("re-encoded frame does not decode: %v", err)
			}
			if diff := cmp.Diff(m, again, eq); diff != "" {
				t.Fatalf("round trip (-first +second):\n%s", diff)
			}
		}
		d, err := Decode(b, limit)
		if err == nil {
			if !bytes.Equal(AppendMessage(nil, d)[PrefixSize:], b[PrefixSize:]) {
				t.Fatalf("Decode then encode changed the parts")
			}
		}
	})
}
