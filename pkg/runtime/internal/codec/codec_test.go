package codec

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/zeebo/xxh3"
)

// Reference vectors. xxh3-64 of the empty input (seed 0) is the published
// XXH3_64bits("") value; the other one is pinned from zeebo/xxh3 and
// cross-checked against it below.
const (
	xxh3Empty uint64 = 0x2d06800538d394c2
	xxh3Small uint64 = 0xe7f3a2e0d65928b2 // xxh3("{}abc")
)

func TestEncodeKnownBytes(t *testing.T) {
	tests := []struct {
		name string
		m    Message
		want []byte
	}{
		{
			name: "header and data",
			m:    Message{Header: []byte("{}"), Data: []byte("abc")},
			want: []byte{
				0, 0, 0, 0, 0, 0, 0, 2, // header_len
				0, 0, 0, 0, 0, 0, 0, 3, // body_len
				0xe7, 0xf3, 0xa2, 0xe0, 0xd6, 0x59, 0x28, 0xb2, // checksum
				'{', '}', 'a', 'b', 'c',
			},
		},
		{
			name: "empty",
			m:    Message{},
			want: []byte{
				0, 0, 0, 0, 0, 0, 0, 0,
				0, 0, 0, 0, 0, 0, 0, 0,
				0x2d, 0x06, 0x80, 0x05, 0x38, 0xd3, 0x94, 0xc2,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := AppendMessage(nil, tc.m)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("AppendMessage (-want +got):\n%s", diff)
			}
			var buf bytes.Buffer
			if err := WriteMessage(&buf, tc.m); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), tc.want) {
				t.Fatalf("WriteMessage = %x, want %x", buf.Bytes(), tc.want)
			}
			dec, err := Decode(tc.want, 0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.m, dec); diff != "" {
				t.Fatalf("Decode (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChecksumIsXXH3(t *testing.T) {
	if got := xxh3.Hash(nil); got != xxh3Empty {
		t.Fatalf("xxh3(empty) = %#x, want %#x", got, xxh3Empty)
	}
	if got := xxh3.Hash([]byte("{}abc")); got != xxh3Small {
		t.Fatalf("xxh3({}abc) = %#x, want %#x", got, xxh3Small)
	}
	m := Message{Header: []byte(`{"id":"x"}`), Data: bytes.Repeat([]byte{7}, 1000)}
	frame := AppendMessage(nil, m)
	want := xxh3.Hash(append(append([]byte{}, m.Header...), m.Data...))
	if got := be64(frame[16:]); got != want {
		t.Fatalf("checksum = %#x, want xxh3(header‖body) = %#x", got, want)
	}
}

func TestAppendMessageKeepsPrefix(t *testing.T) {
	dst := []byte("prefix")
	m := Message{Header: []byte("h"), Data: []byte("d")}
	out := AppendMessage(dst, m)
	if string(out[:6]) != "prefix" {
		t.Fatalf("prefix clobbered: %q", out[:6])
	}
	got, err := Decode(out[6:], 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(m, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestReadMessageShapes(t *testing.T) {
	msgs := []Message{
		{Header: []byte(`{"subject":"s"}`)},
		{Data: []byte("payload")},
		{Header: []byte("h"), Data: []byte("d")},
		{},
	}
	var stream bytes.Buffer
	for _, m := range msgs {
		if err := WriteMessage(&stream, m); err != nil {
			t.Fatal(err)
		}
	}
	// One byte at a time exercises every short read.
	r := iotest.OneByteReader(bytes.NewReader(stream.Bytes()))
	for i, want := range msgs {
		got, err := ReadMessage(r, 0)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("message %d (-want +got):\n%s", i, diff)
		}
	}
	if _, err := ReadMessage(r, 0); err != io.EOF {
		t.Fatalf("after last frame: err = %v, want io.EOF", err)
	}
}

func TestDecodeErrors(t *testing.T) {
	good := AppendMessage(nil, Message{Header: []byte("hdr"), Data: []byte("body")})
	corrupt := bytes.Clone(good)
	corrupt[len(corrupt)-1] ^= 1
	unchecked := bytes.Clone(corrupt)
	copy(unchecked[16:24], make([]byte, 8)) // checksum 0 = not computed
	huge := bytes.Clone(good)
	copy(huge[0:8], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(huge[8:16], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})

	tests := []struct {
		name    string
		frame   []byte
		max     int
		wantErr error // nil means success
	}{
		{"good", good, 0, nil},
		{"checksum zero accepted", unchecked, 0, nil},
		{"checksum mismatch", corrupt, 0, ErrChecksum},
		{"too large for limit", good, 6, ErrTooLarge},
		{"exactly at limit", good, 7, nil},
		{"lengths overflow", huge, 0, ErrTooLarge},
		{"trailing bytes", append(bytes.Clone(good), 0), 0, ErrTrailingData},
		{"short body", good[:len(good)-1], 0, io.ErrUnexpectedEOF},
		{"short prefix", good[:10], 0, io.ErrUnexpectedEOF},
		{"nothing", nil, 0, io.ErrUnexpectedEOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.frame, tc.max)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("Decode err = %v, want %v", err, tc.wantErr)
			}
			wantRead := tc.wantErr
			if wantRead == ErrTrailingData {
				wantRead = nil // a stream reader stops after one frame
			}
			if len(tc.frame) == 0 {
				wantRead = io.EOF
			}
			_, err = ReadMessage(bytes.NewReader(tc.frame), tc.max)
			if !errors.Is(err, wantRead) || (wantRead == nil) != (err == nil) {
				t.Fatalf("ReadMessage err = %v, want %v", err, wantRead)
			}
		})
	}
}

func TestReadMessageAllocs(t *testing.T) {
	frame := AppendMessage(nil, Message{Header: []byte("header"), Data: []byte("data")})
	r := bytes.NewReader(frame)
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset(frame)
		if _, err := ReadMessage(r, 0); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Fatalf("ReadMessage allocs = %v, want ≤ 1", allocs)
	}
}

func TestDecodeCapsCapacity(t *testing.T) {
	frame := AppendMessage(nil, Message{Header: []byte("ab"), Data: []byte("cd")})
	m, err := Decode(frame, 0)
	if err != nil {
		t.Fatal(err)
	}
	_ = append(m.Header, 'X') // must not overwrite Data
	if string(m.Data) != "cd" {
		t.Fatalf("Data = %q after append to Header", m.Data)
	}
}

func be64(b []byte) uint64 {
	var v uint64
	for _, c := range b[:8] {
		v = v<<8 | uint64(c)
	}
	return v
}
