package frontend

import (
	"net"
	"sync"
	"time"
)

// The server's timeouts for a connection between requests and for a
// request's headers; connections given back after a stream (connQueue)
// get the same.
const (
	idleTimeout       = 120 * time.Second
	readHeaderTimeout = 10 * time.Second
)

// connQueue is the listener through which taken-over connections go back
// to the HTTP server after their stream: Run serves it beside the real
// listener, and the server closes it when it shuts down.
//
// A connection given back is idle until its client sends the next
// request. net/http would take any connection it accepts as new, with
// readHeaderTimeout counted from then for the first request; so the
// queue keeps it, as net/http keeps an idle kept-alive connection, for up
// to idleTimeout until the next request's first byte arrives (or closes
// it), and only then hands it to the server. Nothing given back is
// dropped for want of room: giveBack waits for the server to take it.
type connQueue struct {
	addr  net.Addr
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
	idle  time.Duration

	mu      sync.Mutex
	waiting map[net.Conn]struct{} // idle, waiting for their next request
	wg      sync.WaitGroup        // the goroutines of waiting
}

func newConnQueue(addr net.Addr) *connQueue { return newConnQueueOf(addr, 256, idleTimeout) }

// newConnQueueOf is a queue of room connections before giveBack waits,
// which keeps idle ones for up to idle.
func newConnQueueOf(addr net.Addr, room int, idle time.Duration) *connQueue {
	return &connQueue{addr: addr, conns: make(chan net.Conn, room), done: make(chan struct{}),
		idle: idle, waiting: map[net.Conn]struct{}{}}
}

// giveBack hands c, whose response is complete, back to the server for
// its next request, pending being what the client already sent of it: at
// once when there is some, else once its first byte arrives. A connection
// idle for longer than the idle timeout, or given back while the queue
// closes, is closed.
func (q *connQueue) giveBack(c net.Conn, pending []byte) {
	if len(pending) > 0 {
		q.put(&pendingConn{Conn: c, pending: pending})
		return
	}
	q.mu.Lock()
	select {
	case <-q.done:
		q.mu.Unlock()
		_ = c.Close()
		return
	default:
	}
	q.waiting[c] = struct{}{}
	q.wg.Add(1)
	q.mu.Unlock()
	// A goroutine of its own, small, rather than the stream's: the
	// stream's goroutine ends, as net/http's for an idle connection is
	// one goroutine blocked in a read.
	go q.awaitRequest(c)
}

// awaitRequest waits for the first byte of c's next request, then puts
// it in the queue.
func (q *connQueue) awaitRequest(c net.Conn) {
	defer q.wg.Done()
	_ = c.SetReadDeadline(time.Now().Add(q.idle))
	var b [1]byte
	n, _ := c.Read(b[:])
	q.mu.Lock()
	delete(q.waiting, c)
	q.mu.Unlock()
	if n == 0 {
		_ = c.Close() // the client left, stayed idle too long, or the queue closed
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	q.put(&pendingConn{Conn: c, pending: append([]byte(nil), b[:n]...)})
}

// put hands c to the server, waiting for room; it closes c if the queue
// closes first.
func (q *connQueue) put(c net.Conn) {
	select {
	case <-q.done:
		_ = c.Close()
		return
	default:
	}
	select {
	case q.conns <- c:
		select {
		case <-q.done:
			q.drain() // Close may have drained before c went in
		default:
		}
	case <-q.done:
		_ = c.Close()
	}
}

// Accept returns the next connection given back.
func (q *connQueue) Accept() (net.Conn, error) {
	select {
	case c := <-q.conns:
		return c, nil
	case <-q.done:
		return nil, net.ErrClosed
	}
}

// Close stops Accept, closes the connections not taken yet and those
// waiting for their next request, and waits for their goroutines.
func (q *connQueue) Close() error {
	q.once.Do(func() {
		q.mu.Lock()
		close(q.done)
		for c := range q.waiting {
			_ = c.SetReadDeadline(time.Unix(1, 0)) // wakes awaitRequest, which closes it
		}
		q.mu.Unlock()
		q.wg.Wait()
		q.drain()
	})
	return nil
}

// drain closes the connections in the queue.
func (q *connQueue) drain() {
	for {
		select {
		case c := <-q.conns:
			_ = c.Close()
		default:
			return
		}
	}
}

// Addr is the real listener's address.
func (q *connQueue) Addr() net.Addr { return q.addr }

// pendingConn is a connection whose first reads return bytes the client
// sent before it was given back to the server.
type pendingConn struct {
	net.Conn
	pending []byte
}

func (c *pendingConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
