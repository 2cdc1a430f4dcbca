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

// FuzzReadStreamMessage feeds arbitrary bytes, read as a sequence of
// frames of a shared response connection, to ReadStreamMessage. It may not
// panic; every frame it returns must re-encode to the bytes it was read
// from (checksum 0 aside), and the frames read must cover the input up to
// the first error.
func FuzzReadStreamMessage(f *testing.F) {
	var seq []byte
	for i, m := range []Message{
		{Header: []byte(`{"subject":"abc","stream_type":"response"}`)},
		{Header: []byte(`{"error":null}`)},
		{Data: []byte(`{"data":{"data":1},"complete_final":false}`)},
		{Header: []byte(`"reset"`)},
		{Header: []byte(`{"window":131072}`)},
		{},
	} {
		one := AppendStreamMessage(nil, uint64(i+1), m)
		f.Add(one)
		seq = append(seq, one...)
	}
	f.Add(seq)
	f.Add(seq[:len(seq)-3])
	unchecked := AppendStreamMessage(nil, 1, Message{Header: []byte("h"), Data: []byte("d")})
	copy(unchecked[StreamIDSize+16:StreamIDSize+24], make([]byte, 8))
	f.Add(unchecked)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1, 0xff})

	const limit = 1 << 20
	eq := cmpopts.EquateEmpty()
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		for {
			before := int(r.Size()) - r.Len()
			id, m, err := ReadStreamMessage(r, limit)
			if err != nil {
				return
			}
			raw := b[before : int(r.Size())-r.Len()]
			again := AppendStreamMessage(nil, id, m)
			if len(again) != len(raw) || !bytes.Equal(again[:StreamIDSize+16], raw[:StreamIDSize+16]) || !bytes.Equal(again[StreamIDSize+24:], raw[StreamIDSize+24:]) {
				t.Fatalf("frame %x re-encodes as %x", raw, again)
			}
			gotID, m2, err := ReadStreamMessage(bytes.NewReader(again), limit)
			if err != nil || gotID != id {
				t.Fatalf("re-encoded frame: id %d, %v; want id %d", gotID, err, id)
			}
			if diff := cmp.Diff(m, m2, eq); diff != "" {
				t.Fatalf("round trip (-first +second):\n%s", diff)
			}
		}
	})
}
