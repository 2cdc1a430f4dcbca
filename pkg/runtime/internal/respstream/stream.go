package respstream

import (
	"context"
	"errors"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/codec"
)

// ErrClosed is Pool.Open's error once the pool was closed.
var ErrClosed = errors.New("respstream: closed")

// Request is what a response stream needs of its request: its life (the
// context ends when the request is killed, with the cause), and the
// caller's control messages applied to it.
type Request interface {
	context.Context
	// Killed is closed once the request is killed.
	Killed() <-chan struct{}
	// IsKilled reports whether the request was killed.
	IsKilled() bool
	// Stop asks the handler to finish early (the caller's "stop").
	Stop()
	// Kill ends the request (the caller's "kill").
	Kill()
	// CallerGone kills the request because the caller's end of the
	// stream failed.
	CallerGone()
}

// Target is the caller's end of one response stream, from the request's
// connection info.
type Target struct {
	Address string // the caller's response-stream server
	Subject string // names the stream to the caller
	// ServerID and StreamID name the caller's server and the stream on a
	// shared connection (Pool.Open).
	ServerID string
	StreamID uint64
}

// Out is the worker's end of one response stream.
type Out interface {
	// Write sends frames of the stream, in one write when it can, and
	// returns their size on the wire. On a shared connection it may wait
	// for flow-control credit, until the request is killed. The messages
	// are not used after Write returns.
	Write(ms ...codec.Message) (int, error)
	// HandlerDone is called when the handler returned, before the final
	// frames.
	HandlerDone()
	// Close ends the stream after the final frames; ended tells whether
	// they ended it (sentinel or error prologue) or the request was
	// killed.
	Close(ended bool)
}
