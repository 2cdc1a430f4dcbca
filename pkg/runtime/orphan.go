package runtime

import (
	"context"
	"errors"
	"net"
	"os"
	"sync/atomic"
	"time"
)

// orphanWatch bounds the silence of an established response stream whose
// worker has left discovery. A worker whose process froze, or whose host
// was cut off, keeps its TCP connection open (its kernel may even answer
// keep-alives) but sends nothing; once its lease expired and it left
// discovery, the stream may stay silent only for timeout, after which the
// call fails Disconnected and migration re-issues it. A worker that left
// discovery to drain and keeps sending is never cut.
type orphanWatch struct {
	conn    net.Conn
	gone    context.Context // ends when the instance left discovery
	timeout time.Duration   // <= 0: no bound
	left    atomic.Bool
}

// watch arms the bound when the instance leaves discovery; the returned
// function stops watching. It starts no goroutine until then.
func (o *orphanWatch) watch() (stop func()) {
	if o == nil || o.timeout <= 0 {
		return func() {}
	}
	unwatch := context.AfterFunc(o.gone, func() {
		o.left.Store(true)
		_ = o.conn.SetReadDeadline(time.Now().Add(o.timeout))
	})
	return func() { unwatch() }
}

// heard extends the bound after a frame arrived from the worker.
func (o *orphanWatch) heard() {
	if o != nil && o.left.Load() {
		_ = o.conn.SetReadDeadline(time.Now().Add(o.timeout))
	}
}

// silent maps a read failure: a silent orphan's deadline becomes
// errOrphaned.
func (o *orphanWatch) silent(err error) error {
	if o != nil && o.left.Load() && errors.Is(err, os.ErrDeadlineExceeded) {
		return errOrphaned{o.timeout}
	}
	return err
}
