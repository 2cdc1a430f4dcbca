package respstream

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/codec"
)

// connStream is a response stream on a call-home connection of its own
// (the classic protocol), at the caller's end.
type connStream struct {
	conn    net.Conn
	r       *bufio.Reader
	maxSize int
	orphan  *orphanWatch
	unwatch func()

	mu sync.Mutex // serializes control frames
}

func newConnStream(conn net.Conn, maxSize int, p *Pending, orphanTimeout time.Duration) *connStream {
	c := &connStream{conn: conn, r: bufio.NewReader(conn), maxSize: maxSize}
	c.orphan = &orphanWatch{conn: conn, gone: p.gone, timeout: orphanTimeout}
	c.unwatch = c.orphan.watch()
	return c
}

func (c *connStream) Next(Call) (codec.Message, error) {
	m, err := codec.ReadMessage(c.r, c.maxSize)
	if err != nil {
		return m, c.orphan.silent(err)
	}
	c.orphan.heard()
	return m, nil
}

func (c *connStream) Ready() bool { return codec.FrameBuffered(c.r) }

func (c *connStream) Stop() { c.control(ctrlStop) }

func (c *connStream) Kill() { c.control(ctrlKill) }

func (c *connStream) control(ctrl []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.conn.SetWriteDeadline(time.Now().Add(time.Second))
	_ = codec.WriteMessage(c.conn, codec.Message{Header: ctrl})
}

// Abort closes the connection, which ends a pending read.
func (c *connStream) Abort() { c.conn.Close() }

func (c *connStream) Close(bool) {
	c.unwatch()
	c.conn.Close()
}

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

// silent maps a read failure: a silent orphan's deadline becomes an
// OrphanedError.
func (o *orphanWatch) silent(err error) error {
	if o != nil && o.left.Load() && errors.Is(err, os.ErrDeadlineExceeded) {
		return OrphanedError{o.timeout}
	}
	return err
}
