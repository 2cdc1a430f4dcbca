// Package respstream implements the response-stream transport between a
// caller and a worker (docs/protocol.md §7), both of its ends, with one
// declaration of its wire messages (wire.go):
//
//   - the caller's end (caller*.go): the Server that workers call home to,
//     its Pending streams, and the Stream a call reads, on a connection of
//     its own or on a connection shared by the caller's streams to one
//     worker (reading, flow-control credit, keep-going frames);
//   - the worker's end: it calls the caller home and writes the frames of
//     each stream, on a connection of its own (Dial) or on a connection it
//     shares with its other streams to that caller (Pool).
//
// The frames themselves (the prologue, the data items, the final frames)
// are the runtime's; this package carries them, with the shared
// connections' handshake, flow control, acks and keep-going frames.
//
// # Lifecycle
//
// Listen opens the caller's listener and starts nothing: Server.Run
// accepts and reads the connections (one goroutine each) until its
// context ends, and waits for them. NewPool starts nothing: a shared
// connection is dialled by the first stream that needs it, and owns one
// goroutine (dial, then read the caller's control frames) that Pool.Close
// stops and waits for. A stream opened with Dial owns a goroutine that
// reads the caller's control frames; its Close ends it.
//
// # Errors
//
// At the caller: Server.Register fails with ErrInstanceLeft for an
// instance that left discovery moments ago; Stream.Next fails with
// ErrReset when the worker abandoned a shared stream, with an
// OrphanedError when a stream whose instance left discovery stayed
// silent, with the call's cause once the call is killed, else with the
// connection's error. At the worker: a stream whose caller's connection
// failed kills its request through Request.CallerGone; Pool.Open on a
// closed pool returns ErrClosed.
package respstream
