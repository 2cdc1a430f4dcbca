package respstream

import (
	"context"
	"errors"
	"fmt"
	"time"

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

// Call is what reading a response stream needs of the call it serves:
// its life. Once the call is killed (Killed closes, and the context ends
// with the cause), a pending Stream.Next returns the cause.
type Call interface {
	context.Context
	// Killed is closed once the call is killed.
	Killed() <-chan struct{}
}

// Stream is the caller's end of one established response stream: a
// call-home connection of its own or a stream on a shared connection.
type Stream interface {
	// Next returns the stream's next frame. Once the instance has left
	// discovery it fails with an OrphanedError after a silence of the
	// orphan timeout; once c is killed it fails promptly.
	Next(c Call) (codec.Message, error)
	// Ready reports whether Next would return a frame without waiting
	// for the network.
	Ready() bool
	// Stop asks the worker to finish early (the "stop" control message).
	Stop()
	// Kill tells the worker to abandon the request ("kill").
	Kill()
	// Abort makes a pending Next return, after a kill.
	Abort()
	// Close ends the caller's side. ended tells that the worker ended the
	// stream itself (complete_final, an error prologue, a reset); if not,
	// the worker is told to abandon it.
	Close(ended bool)
}

// ErrReset is Next's error after the worker abandoned a stream on a
// shared connection ("reset"): the counterpart of a classic connection's
// clean end.
var ErrReset = errors.New("runtime: stream reset by the worker")

// OrphanedError is Next's error for a stream that stayed silent for
// Timeout after its worker left discovery.
type OrphanedError struct{ Timeout time.Duration }

// Error says how long the orphan was silent.
func (e OrphanedError) Error() string {
	return fmt.Sprintf("runtime: the worker left discovery and its stream was silent for %s", e.Timeout)
}
