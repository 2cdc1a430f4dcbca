package codec

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/zeebo/xxh3"
)

// prefixPool recycles prefix buffers so ReadMessage allocates only the
// buffer that holds header and body.
var prefixPool = sync.Pool{New: func() any { return new([PrefixSize]byte) }}

// ReadMessage reads one frame from r. maxSize bounds header+body; 0 (or a
// negative value) means DefaultMaxMessageSize.
//
// It returns io.EOF only when r ends before the first byte of a frame and
// io.ErrUnexpectedEOF when r ends inside one. After ErrTooLarge the body has
// not been consumed, so the stream is no longer positioned at a frame.
// Header and Data share one allocation sized exactly for the frame.
func ReadMessage(r io.Reader, maxSize int) (Message, error) {
	p := prefixPool.Get().(*[PrefixSize]byte)
	_, err := io.ReadFull(r, p[:])
	hl, bl, sum := parsePrefix(p)
	prefixPool.Put(p)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return Message{}, io.EOF
		}
		return Message{}, fmt.Errorf("codec: read prefix: %w", err)
	}
	return readParts(r, hl, bl, sum, maxSize)
}

// readParts reads the header and body announced by a prefix.
func readParts(r io.Reader, hl, bl, sum uint64, maxSize int) (Message, error) {
	n, err := checkSize(hl, bl, maxSize)
	if err != nil {
		return Message{}, err
	}
	var buf []byte
	if n > 0 {
		buf = make([]byte, n)
		if _, err := io.ReadFull(r, buf); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return Message{}, fmt.Errorf("codec: read body: %w", err)
		}
	}
	return split(buf, int(hl), sum)
}

// Decode decodes b, which must hold exactly one frame. maxSize is as for
// ReadMessage. The returned parts alias b (with capacities capped, so
// appending to them never overwrites b); Decode itself does not allocate.
func Decode(b []byte, maxSize int) (Message, error) {
	if len(b) < PrefixSize {
		return Message{}, fmt.Errorf("codec: decode: %d-byte frame: %w", len(b), io.ErrUnexpectedEOF)
	}
	hl, bl, sum := parsePrefix((*[PrefixSize]byte)(b))
	n, err := checkSize(hl, bl, maxSize)
	if err != nil {
		return Message{}, err
	}
	rest := b[PrefixSize:]
	switch {
	case len(rest) < n:
		return Message{}, fmt.Errorf("codec: decode: want %d bytes after prefix, have %d: %w", n, len(rest), io.ErrUnexpectedEOF)
	case len(rest) > n:
		return Message{}, fmt.Errorf("%w: %d bytes", ErrTrailingData, len(rest)-n)
	}
	return split(rest, int(hl), sum)
}

func parsePrefix(p *[PrefixSize]byte) (hl, bl, sum uint64) {
	return binary.BigEndian.Uint64(p[0:]), binary.BigEndian.Uint64(p[8:]), binary.BigEndian.Uint64(p[16:])
}

// checkSize validates the two lengths against the limit without overflow and
// returns their sum.
func checkSize(hl, bl uint64, maxSize int) (int, error) {
	if maxSize <= 0 {
		maxSize = DefaultMaxMessageSize
	}
	limit := uint64(maxSize)
	if hl > limit || bl > limit || hl+bl > limit {
		return 0, fmt.Errorf("%w: header %d + body %d bytes, limit %d", ErrTooLarge, hl, bl, limit)
	}
	return int(hl + bl), nil
}

// split verifies the checksum of buf (header‖body) and cuts it in two.
func split(buf []byte, hl int, sum uint64) (Message, error) {
	if sum != 0 {
		if got := xxh3.Hash(buf); got != sum {
			return Message{}, fmt.Errorf("%w: frame says %#016x, computed %#016x", ErrChecksum, sum, got)
		}
	}
	var m Message
	if hl > 0 {
		m.Header = buf[:hl:hl]
	}
	if len(buf) > hl {
		m.Data = buf[hl:len(buf):len(buf)]
	}
	return m, nil
}

// FrameBuffered reports whether r's buffer holds at least one whole frame,
// so that the next ReadMessage from r returns without waiting for the
// network (or fails on a bad prefix).
func FrameBuffered(r *bufio.Reader) bool {
	n := r.Buffered()
	if n < PrefixSize {
		return false
	}
	b, err := r.Peek(PrefixSize)
	if err != nil {
		return false
	}
	hl, bl, _ := parsePrefix((*[PrefixSize]byte)(b))
	return uint64(n-PrefixSize) >= hl+bl || hl+bl < hl // overflow: a bad prefix fails at once
}
