package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
)

// StreamIDSize is the size of the stream id that precedes every frame on a
// shared (multiplexed) response connection: a big-endian uint64.
//
//	stream_id | header_len | body_len | checksum | header | body
const StreamIDSize = 8

var streamPrefixPool = sync.Pool{New: func() any { return new([StreamIDSize + PrefixSize]byte) }}

// AppendStreamMessage appends the frame of m, preceded by stream id id, to
// dst and returns the extended slice.
func AppendStreamMessage(dst []byte, id uint64, m Message) []byte {
	dst = slices.Grow(dst, StreamIDSize+m.Size())
	dst = binary.BigEndian.AppendUint64(dst, id)
	return AppendMessage(dst, m)
}

// ReadStreamMessage reads one frame preceded by its stream id from r.
// maxSize bounds header+body as for ReadMessage, and the errors are the
// same: io.EOF only when r ends before the first byte of the stream id,
// io.ErrUnexpectedEOF (wrapped) when it ends anywhere after it.
func ReadStreamMessage(r io.Reader, maxSize int) (uint64, Message, error) {
	p := streamPrefixPool.Get().(*[StreamIDSize + PrefixSize]byte)
	_, err := io.ReadFull(r, p[:])
	id := binary.BigEndian.Uint64(p[:StreamIDSize])
	hl, bl, sum := parsePrefix((*[PrefixSize]byte)(p[StreamIDSize:]))
	streamPrefixPool.Put(p)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return 0, Message{}, io.EOF
		}
		return 0, Message{}, fmt.Errorf("codec: read stream prefix: %w", err)
	}
	m, err := readParts(r, hl, bl, sum, maxSize)
	return id, m, err
}
