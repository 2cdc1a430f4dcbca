package codec

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

func TestStreamMessageKnownBytes(t *testing.T) {
	got := AppendStreamMessage(nil, 0x0102030405060708, Message{Header: []byte("{}"), Data: []byte("abc")})
	want := append([]byte{1, 2, 3, 4, 5, 6, 7, 8}, AppendMessage(nil, Message{Header: []byte("{}"), Data: []byte("abc")})...)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("AppendStreamMessage (-want +got):\n%s", diff)
	}
	// The frame after the id is the plain two-part frame of §3, checksum
	// and all: e7 f3 a2 e0 d6 59 28 b2 for header {} and body abc.
	if !bytes.Equal(got[8+16:8+24], []byte{0xe7, 0xf3, 0xa2, 0xe0, 0xd6, 0x59, 0x28, 0xb2}) {
		t.Fatalf("checksum bytes = %x", got[24:32])
	}
}

func TestReadStreamMessageShapes(t *testing.T) {
	type frame struct {
		ID  uint64
		Msg Message
	}
	frames := []frame{
		{1, Message{Header: []byte(`{"subject":"s","stream_type":"response"}`)}},
		{2, Message{Header: []byte(`{"error":null}`)}},
		{1, Message{Data: []byte(`{"data":{"data":1},"complete_final":false}`)}},
		{1<<64 - 1, Message{Header: []byte("h"), Data: []byte("d")}},
		{0, Message{}},
	}
	var stream []byte
	for _, f := range frames {
		stream = AppendStreamMessage(stream, f.ID, f.Msg)
	}
	r := iotest.OneByteReader(bytes.NewReader(stream))
	for i, want := range frames {
		id, m, err := ReadStreamMessage(r, 0)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if diff := cmp.Diff(want, frame{id, m}); diff != "" {
			t.Fatalf("frame %d (-want +got):\n%s", i, diff)
		}
	}
	if _, _, err := ReadStreamMessage(r, 0); err != io.EOF {
		t.Fatalf("after the last frame: err = %v, want io.EOF", err)
	}
}

func TestReadStreamMessageErrors(t *testing.T) {
	good := AppendStreamMessage(nil, 7, Message{Header: []byte("hdr"), Data: []byte("body")})
	corrupt := bytes.Clone(good)
	corrupt[len(corrupt)-1] ^= 1
	tests := []struct {
		name    string
		b       []byte
		max     int
		wantErr error
	}{
		{"good", good, 0, nil},
		{"nothing", nil, 0, io.EOF},
		{"inside the id", good[:3], 0, io.ErrUnexpectedEOF},
		{"after the id", good[:8], 0, io.ErrUnexpectedEOF},
		{"inside the prefix", good[:20], 0, io.ErrUnexpectedEOF},
		{"short body", good[:len(good)-1], 0, io.ErrUnexpectedEOF},
		{"checksum mismatch", corrupt, 0, ErrChecksum},
		{"too large", good, 6, ErrTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id, _, err := ReadStreamMessage(bytes.NewReader(tc.b), tc.max)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err == nil && id != 7 {
				t.Fatalf("id = %d, want 7", id)
			}
		})
	}
}

func TestReadStreamMessageAllocs(t *testing.T) {
	frame := AppendStreamMessage(nil, 9, Message{Header: []byte("header"), Data: []byte("data")})
	r := bytes.NewReader(frame)
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset(frame)
		if _, _, err := ReadStreamMessage(r, 0); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Fatalf("ReadStreamMessage allocs = %v, want ≤ 1", allocs)
	}
}
