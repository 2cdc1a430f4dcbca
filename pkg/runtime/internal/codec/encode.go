package codec

import (
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/zeebo/xxh3"
)

// AppendMessage appends the frame of m to dst and returns the extended
// slice. It allocates only when dst lacks capacity.
func AppendMessage(dst []byte, m Message) []byte {
	start := len(dst)
	dst = slices.Grow(dst, m.Size())
	dst = binary.BigEndian.AppendUint64(dst, uint64(len(m.Header)))
	dst = binary.BigEndian.AppendUint64(dst, uint64(len(m.Data)))
	dst = binary.BigEndian.AppendUint64(dst, 0) // checksum, filled below
	dst = append(dst, m.Header...)
	dst = append(dst, m.Data...)
	sum := xxh3.Hash(dst[start+PrefixSize:])
	binary.BigEndian.PutUint64(dst[start+16:], sum)
	return dst
}

// WriteMessage encodes m and writes the frame to w with a single Write call,
// so concurrent writers that serialize their calls never interleave frames.
func WriteMessage(w io.Writer, m Message) error {
	buf := AppendMessage(make([]byte, 0, m.Size()), m)
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("codec: write: %w", err)
	}
	return nil
}
