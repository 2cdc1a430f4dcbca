// Package codec implements the two-part frame (TwoPartCodec) that carries
// every request envelope and every response-stream message of the runtime.
//
// A frame is a 24-byte prefix of three big-endian uint64 values followed by
// the two parts:
//
//	header_len | body_len | checksum | header | body
//
// The checksum is the xxHash3-64 of header‖body. The encoder always computes
// it; the decoder verifies it when it is non-zero and treats 0 as "not
// computed", as the newest reference implementation does.
//
// On a shared (multiplexed) response connection every frame is preceded by
// the big-endian uint64 id of the stream it belongs to
// (AppendStreamMessage, ReadStreamMessage); the frame itself is unchanged.
//
// The functions are stateless and safe for concurrent use. Decoding errors
// are ErrTooLarge, ErrChecksum and ErrTrailingData (match with errors.Is),
// plus io.EOF when a stream ends cleanly between frames and
// io.ErrUnexpectedEOF when it ends inside one.
package codec
