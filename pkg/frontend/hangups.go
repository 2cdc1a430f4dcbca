package frontend

import (
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"syscall"
	"time"
)

// A stream that took its connection over (detach.go) must learn when its
// client leaves, to kill the request everywhere at once, as net/http's
// background read does for a handler. Reading the connection takes a
// goroutine per stream (watchByReading); on Linux one epoll instance
// watches every such connection for the client's hang-up instead
// (hangups_linux.go), so a stream costs no goroutine but its own.

// hangupWatcher watches taken-over connections for their client leaving.
type hangupWatcher interface {
	// watch calls gone once if conn's client leaves (closes or resets the
	// connection); unwatch stops that and reports whether it left, and
	// any bytes the watcher read from conn (the client's next request).
	watch(conn net.Conn, gone func()) (unwatch func() (left bool, more []byte), err error)
	// close stops watching every connection.
	close()
}

// readingWatcher watches each connection with a goroutine of its own
// (watchByReading): the watcher where epoll is not there.
type readingWatcher struct{}

func (readingWatcher) watch(conn net.Conn, gone func()) (func() (bool, []byte), error) {
	return watchByReading(conn, gone), nil
}

func (readingWatcher) close() {}

// maxPipelined bounds what a client may send while its answer streams;
// more ends the stream as if the client had left.
const maxPipelined = 64 << 10

var errPipelinedTooMuch = errors.New("frontend: client sent too much while its answer streamed")

// watchByReading reads conn on a goroutine until it fails or unwatch
// stops it: bytes are kept for the next request; an end or an error that
// unwatch did not cause means the client is gone.
func watchByReading(conn net.Conn, gone func()) (unwatch func() (bool, []byte)) {
	var (
		mu       sync.Mutex
		pending  []byte
		stopping bool
		left     bool
		done     = make(chan struct{})
	)
	go func() {
		defer close(done)
		var b [1]byte
		for {
			n, err := conn.Read(b[:])
			mu.Lock()
			if n > 0 {
				pending = append(pending, b[0])
				if len(pending) > maxPipelined {
					err = errPipelinedTooMuch
				}
			}
			if err != nil {
				quit := stopping
				left = !quit
				mu.Unlock()
				if !quit {
					gone()
				}
				return
			}
			mu.Unlock()
		}
	}()
	return func() (bool, []byte) {
		mu.Lock()
		stopping = true
		mu.Unlock()
		_ = conn.SetReadDeadline(time.Unix(1, 0)) // wakes the read
		<-done
		_ = conn.SetReadDeadline(time.Time{})
		return left, pending
	}
}

// rawConn is the system connection under conn (through TLS).
func rawConn(conn net.Conn) (syscall.RawConn, error) {
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil, errors.New("frontend: the connection has no file descriptor")
	}
	return sc.SyscallConn()
}
