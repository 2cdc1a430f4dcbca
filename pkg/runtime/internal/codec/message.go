package codec

import "errors"

// PrefixSize is the size of the fixed frame prefix: header_len, body_len and
// checksum, each a big-endian uint64.
const PrefixSize = 24

// DefaultMaxMessageSize is the limit on header+body used when a maxSize
// argument is 0: 32 MiB, the reference DYN_TCP_MAX_MESSAGE_SIZE default.
const DefaultMaxMessageSize = 32 << 20

// Errors returned by the decoders.
var (
	// ErrTooLarge reports a frame whose header+body exceeds the limit.
	ErrTooLarge = errors.New("codec: message too large")
	// ErrChecksum reports a frame whose non-zero checksum does not match
	// the xxHash3-64 of its header and body.
	ErrChecksum = errors.New("codec: checksum mismatch")
	// ErrTrailingData reports bytes after the frame given to Decode.
	ErrTrailingData = errors.New("codec: trailing data after frame")
)

// Message is one two-part frame. Either part may be empty: a message is
// header-only, data-only, header+data or empty. Decoders return nil for an
// empty part.
type Message struct {
	// Header is the control part (JSON in every current use).
	Header []byte
	// Data is the body part.
	Data []byte
}

// Size returns the encoded size of m, prefix included.
func (m Message) Size() int {
	return PrefixSize + len(m.Header) + len(m.Data)
}
