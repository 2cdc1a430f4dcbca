package runtime

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

// Causes a request Context's Done channel reports through context.Cause.
var (
	// ErrKilled is the cause after Kill (or after the parent context ended).
	ErrKilled = &Error{Type: TypeCancelled, Message: "request killed"}
)

type ctxState uint8

const (
	stateLive ctxState = iota
	stateStopped
	stateKilled
)

// Context is the per-request context of the reference system's
// AsyncEngineContext. It is a context.Context whose Done channel closes when
// the request is killed (context.Cause then reports why), plus a graceful
// stop: after Stop the producer should finish the stream early but cleanly
// (an engine ends it with finish reason "cancelled").
//
// State only moves forward: live -> stopped -> killed. Stop and Kill are
// forwarded to every linked child, in link order, before they apply to the
// parent. The caller's Stop and Kill travel to the worker over the response
// stream, where the handler's Context of the same ID sees them.
//
// A Context is safe for concurrent use.
type Context struct {
	context.Context
	id     string
	cancel context.CancelCauseFunc
	unhook func() bool

	idle atomic.Pointer[func()] // OnStreamIdle

	// stopCtx is done once the context is stopped or killed: Stopped is
	// its Done channel, and a stream's control forwarding hangs off it
	// (context.AfterFunc) instead of a goroutine per stream.
	stopCtx context.Context
	stop    context.CancelFunc

	mu       sync.Mutex
	state    ctxState
	killed   chan struct{}
	children []*Context
}

type contextKey struct{}

// NewContext returns a live Context with the given request id (a new UUID v4
// when id is empty). When parent ends, the Context is killed with parent's
// cause.
func NewContext(parent context.Context, id string) *Context {
	if id == "" {
		id = uuid.NewString()
	}
	inner, cancel := context.WithCancelCause(parent)
	c := &Context{
		Context: inner,
		id:      id,
		cancel:  cancel,
		killed:  make(chan struct{}),
	}
	c.stopCtx, c.stop = context.WithCancel(inner)
	c.unhook = context.AfterFunc(parent, func() { c.kill(context.Cause(parent)) })
	return c
}

// FromContext returns the request Context carried by ctx, if any.
func FromContext(ctx context.Context) (*Context, bool) {
	c, ok := ctx.Value(contextKey{}).(*Context)
	return c, ok
}

// Value returns c itself for FromContext, its id for
// telemetry.RequestID (log lines carry it), and defers to the parent
// otherwise.
func (c *Context) Value(key any) any {
	switch key {
	case contextKey{}:
		return c
	case telemetry.RequestIDKey{}:
		return c.id
	}
	return c.Context.Value(key)
}

// ID returns the request id.
func (c *Context) ID() string { return c.id }

// StopGenerating asks the producer to finish the stream early; it is the
// same as Stop.
func (c *Context) StopGenerating() { c.Stop() }

// Stop moves a live context to stopped. It has no effect once stopped or
// killed.
func (c *Context) Stop() {
	c.mu.Lock()
	children := append([]*Context(nil), c.children...)
	c.mu.Unlock()
	for _, ch := range children {
		ch.Stop()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == stateLive {
		c.state = stateStopped
		c.stop()
	}
}

// Kill ends the request at once: Done closes with cause ErrKilled.
func (c *Context) Kill() { c.kill(ErrKilled) }

func (c *Context) kill(cause error) {
	if cause == nil || cause == context.Canceled {
		cause = ErrKilled
	}
	c.mu.Lock()
	children := append([]*Context(nil), c.children...)
	c.mu.Unlock()
	for _, ch := range children {
		ch.kill(cause)
	}
	c.mu.Lock()
	if c.state == stateKilled {
		c.mu.Unlock()
		return
	}
	if c.state == stateLive {
		c.stop()
	}
	c.state = stateKilled
	close(c.killed)
	c.mu.Unlock()
	c.cancel(cause)
}

// Release frees the link to the parent context. Call it when the request
// is over; it does not change the state.
func (c *Context) Release() {
	c.unhook()
	c.mu.Lock()
	c.children = nil
	c.mu.Unlock()
}

// IsStopped reports whether the context was stopped or killed.
func (c *Context) IsStopped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state != stateLive
}

// IsKilled reports whether the context was killed.
func (c *Context) IsKilled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state == stateKilled
}

// Stopped is closed once the context is stopped or killed.
func (c *Context) Stopped() <-chan struct{} { return c.stopCtx.Done() }

// Killed is closed once the context is killed.
func (c *Context) Killed() <-chan struct{} { return c.killed }

// LinkChild makes child follow c: every later Stop or Kill of c reaches
// child first. A child linked to a context that is already stopped or
// killed is stopped or killed at once.
func (c *Context) LinkChild(child *Context) {
	c.mu.Lock()
	state := c.state
	c.children = append(c.children, child)
	c.mu.Unlock()
	switch state {
	case stateStopped:
		child.Stop()
	case stateKilled:
		child.kill(context.Cause(c.Context))
	}
}
