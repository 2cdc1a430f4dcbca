// Package respstream implements the response-stream transport between a
// caller and a worker (docs/protocol.md §7): the worker's end, which calls
// the caller home and writes the frames of each stream, on a connection of
// its own (Dial) or on a connection it shares with the caller's other
// streams (Pool).
//
// The frames themselves (the prologue, the data items, the final frames)
// are the runtime's; this package carries them, with the shared
// connections' handshake, flow control, acks and keep-going frames.
//
// # Lifecycle
//
// NewPool starts nothing: a shared connection is dialled by the first
// stream that needs it, and owns one goroutine (dial, then read the
// caller's control frames) that Pool.Close stops and waits for. A stream
// opened with Dial owns a goroutine that reads the caller's control
// frames; its Close ends it.
//
// # Errors
//
// A stream whose caller's connection failed kills its request through
// Request.CallerGone. Pool.Open on a closed pool returns ErrClosed.
package respstream
