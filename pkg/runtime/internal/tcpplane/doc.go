// Package tcpplane implements the TCP request plane: the worker-side
// listener that receives requests and acks them, and the caller-side client
// that keeps a small pool of pipelined connections per worker address.
//
// # Wire format
//
// All integers are big-endian.
//
//	request: u16 path_len | path | u16 headers_len | headers | u32 payload_len | payload
//	ack:     u32 len | text
//
// headers is a JSON object of strings (zero length is allowed and means no
// headers). An ack with len 0 means "accepted"; a longer ack carries an
// error text. Requests on one connection are pipelined and acked strictly
// in FIFO order.
//
// # Lifecycle
//
// Listen binds at once; Run accepts connections until its context ends or
// Close is called, and returns only after every connection goroutine has
// exited. NewClient starts nothing: connections are dialed on demand by
// Send, and each owns a reader and a writer goroutine that Client.Close
// stops and waits for. Server and Client are safe for concurrent use.
//
// # Errors
//
// Send returns nil after an empty ack and a *plane.AckError after a text
// ack. Other failures wrap ErrConnLost (the connection broke or its peer
// is gone: every request pending on it fails at once), ErrAckTimeout
// alone (no ack in time from a peer that is alive but slow: only that
// request fails, and its ack, when it comes, is dropped), ErrTooLarge,
// ErrClosed, the dial error, or the context's error. Callers treat an
// ErrAckTimeout that is not ErrConnLost as overload, and the others but
// *plane.AckError as "cannot connect".
package tcpplane
