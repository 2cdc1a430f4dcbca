// Package plane holds the types shared by the request-plane transports
// (tcpplane, natsplane): the server-side Handler, the AckError a client
// returns when a server rejects a request, and ErrNoResponders.
package plane

import "errors"

// Handler is called by a request-plane server for every request addressed
// to the path or subject it is registered under, synchronously and in
// arrival order per connection (or per NATS subscription); calls for
// different connections may run concurrently. It must return quickly: it
// only queues the work, and the connection waits for it. A nil result makes the server send the empty "accepted" ack; an
// error makes the server send err.Error() as the ack text, and the client
// then returns an *AckError. headers may be nil; payload is owned by the
// handler.
type Handler func(headers map[string]string, payload []byte) error

// AckError is returned by a request-plane client when the server answered
// with a non-empty ack: the server received the request and rejected it.
type AckError struct {
	// Text is the error text sent by the server, e.g.
	// "Unknown endpoint: 7b/generate".
	Text string
}

// Error returns the text with a "request plane: rejected: " prefix.
func (e *AckError) Error() string {
	return "request plane: rejected: " + e.Text
}

// ErrNoResponders reports that nobody serves the subject or path a request
// was sent to.
var ErrNoResponders = errors.New("request plane: no responders")
