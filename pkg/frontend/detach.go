package frontend

import (
	"bytes"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"
)

// A streamed request leaves net/http's connection goroutine once it is
// decoded: the stream takes its connection over (Hijack) and runs on a
// goroutine of its own, and the handler returns. What net/http keeps per
// connection while a handler runs (its 4 KiB read and write buffers, its
// connection and request state, the goroutine that runs the handler) is
// then released for the stream's lifetime, which is most of a long
// answer; at many concurrent streams that is most of the frontend's
// memory (docs/benchmarks.md). The stream writes its response itself
// (rawResponse: the status line and headers when the first byte goes out,
// the body in HTTP/1.1 chunked encoding); a watcher reading the
// connection tells it when the client leaves, as net/http's own
// background read does; and once the response is complete the connection
// goes back to the server for its next request (keep-alive, connQueue),
// with any bytes the client sent meanwhile. HTTP/2 connections cannot be
// taken over and stream on the handler as before.

// detachedStream is a stream's connection after the takeover.
type detachedStream struct {
	conn net.Conn
	resp *rawResponse
	// pending are the bytes the client had sent after its request when
	// the connection was taken over (HTTP/1.1 pipelining).
	pending []byte
	// unwatch stops watching for the client leaving (hangups.go): whether
	// it left, and what more it sent that the watcher read.
	unwatch func() (left bool, more []byte)
}

// detachable reports whether x, a stream with inflight streams in flight
// (itself included), takes its connection over: an HTTP/1.1 request,
// served by Run (which takes connections back), with at least
// Config.DetachStreamsAt streams in flight, whose writer can be hijacked.
// Below that the memory saved is small and the handler's path a little
// faster (docs/benchmarks.md).
func (x *exchange) detachable(r *http.Request, inflight int64) bool {
	at := x.s.cfg.DetachStreamsAt
	if at < 0 || inflight < int64(at) || x.s.returned == nil || r.ProtoMajor != 1 || r.ProtoMinor < 1 {
		return false
	}
	w := x.w
	for {
		if _, ok := w.(http.Hijacker); ok {
			return true
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return false
		}
		w = u.Unwrap()
	}
}

// detach takes x's connection over: x.w (a *statusWriter) then writes
// through a rawResponse with the headers set so far, and a watcher calls
// gone when the client leaves. It returns false when the connection
// could not be taken (nothing changed).
func (x *exchange) detach(r *http.Request, gone func()) bool {
	sw, ok := x.w.(*statusWriter)
	if !ok {
		return false
	}
	// The header map is the stream's from now on: net/http does not
	// touch a hijacked response's again.
	header := sw.Header()
	conn, brw, err := http.NewResponseController(sw).Hijack()
	if err != nil {
		x.s.log.DebugContext(x.rc, "frontend: stream keeps its handler", "request_id", x.id, "error", err)
		return false
	}
	d := &detachedStream{conn: conn, resp: &rawResponse{conn: conn, header: header, close: r.Close, closing: x.s.shuttingDown.Load}}
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		d.pending = append([]byte(nil), b...)
	}
	if d.unwatch, err = x.s.hangups.watch(conn, gone); err != nil {
		x.s.log.DebugContext(x.rc, "frontend: a goroutine watches the stream's client", "request_id", x.id, "error", err)
		d.unwatch = watchByReading(conn, gone)
	}
	sw.ResponseWriter = d.resp
	x.detached = d
	x.s.track(x, true)
	return true
}

// runDetached runs x's stream once it took its connection over, then
// ends the response and gives the connection back (or closes it), then
// runs cleanup: what the handler would have done when it returned.
func (x *exchange) runDetached(req apiRequest, m ServedModel, cleanup reqCleanup) {
	d := x.detached
	defer cleanup.run()
	defer func() {
		// What the outermost middleware does for a handler (recover.go):
		// the stream is no longer under it.
		v := recover()
		if v == nil {
			return
		}
		x.s.log.Error("frontend: stream panic", "request_id", x.id, "panic", v, "stack", string(debug.Stack()))
		x.rc.Kill()
		x.s.track(x, false)
		if d.resp.sent {
			d.finish(x.s, false) // cut: the client sees the answer end early
			return
		}
		writeError(x.w, x.shape, apiError{status: http.StatusInternalServerError, kind: ErrInternal, message: "Internal server error", param: ""})
		d.finish(x.s, true)
	}()
	x.stream(req, m)
	x.s.track(x, false)
	d.finish(x.s, !x.clientGone.Load())
}

// finish ends the response (its last chunk, when ok says it is whole),
// stops watching the client and gives the connection back to s for the
// client's next request (the queue keeps it as net/http keeps an idle
// connection), or closes it.
func (d *detachedStream) finish(s *Service, ok bool) {
	_ = d.conn.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	ok = ok && d.resp.end() == nil
	left, more := d.unwatch()
	if !ok || left || d.resp.close || s.shuttingDown.Load() {
		_ = d.conn.Close()
		return
	}
	_ = d.conn.SetDeadline(time.Time{})
	s.returned.giveBack(d.conn, append(d.pending, more...))
}

// rawResponse writes an HTTP/1.1 response straight to a taken-over
// connection: the status line and the headers go out with the first
// write (or flush), the body in chunked encoding, each write one chunk
// sent at once (but see holdNextWrite); end sends the last chunk. The first error sticks. It
// implements what http.ResponseController asks of a writer.
type rawResponse struct {
	conn   net.Conn
	header http.Header
	status int  // WriteHeader's; 0: 200
	sent   bool // the status line and headers are out
	close  bool // the connection closes after this response
	// holdNext makes the next Write keep its bytes in held, which go out
	// with the end of the body (end): the stream's last events and the
	// last chunk in one system call.
	holdNext bool
	held     []byte
	// closing reports whether the server is shutting down: a response
	// whose headers go out then says it closes the connection, as
	// net/http's do (nil: never).
	closing func() bool
	err     error
	// size, vec and bufs hold a chunk's framing for writev, kept here so
	// that a write allocates nothing.
	size [20]byte
	vec  [3][]byte
	bufs net.Buffers
}

func (w *rawResponse) Header() http.Header { return w.header }

func (w *rawResponse) WriteHeader(code int) {
	if w.status == 0 && !w.sent {
		w.status = code
	}
}

func (w *rawResponse) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, w.FlushError()
	}
	if w.holdNext && w.err == nil {
		w.holdNext = false
		w.held = append(w.held[:0], p...)
		return len(p), nil
	}
	if err := w.sendHeld(); err != nil {
		return 0, err
	}
	if err := w.write(p, false); err != nil {
		return 0, err
	}
	return len(p), nil
}

// FlushError sends the status line and headers if they are not out yet
// (every write is sent at once).
func (w *rawResponse) FlushError() error {
	if err := w.sendHeld(); err != nil || w.sent {
		return err
	}
	return w.write(nil, false)
}

// holdNextWrite makes the next Write's bytes leave with the end of the
// body (end) instead of at once: a stream's last events and the last
// chunk in one write. A Write or flush before end sends them first.
func (w *rawResponse) holdNextWrite() { w.holdNext = true }

// sendHeld sends the held bytes, if any, as a chunk.
func (w *rawResponse) sendHeld() error {
	if len(w.held) == 0 || w.err != nil {
		return w.err
	}
	p := w.held
	w.held = nil
	return w.write(p, false)
}

// SetWriteDeadline bounds the writes to the connection.
func (w *rawResponse) SetWriteDeadline(t time.Time) error { return w.conn.SetWriteDeadline(t) }

// end sends the held bytes and the last chunk (and the headers, if
// nothing was written) in one write.
func (w *rawResponse) end() error {
	p := w.held
	w.held, w.holdNext = nil, false
	return w.write(p, true)
}

var (
	crlf      = []byte("\r\n")
	lastChunk = []byte("0\r\n\r\n")
)

// write sends the headers if they are not out yet, then p as one chunk
// (none if empty), then the last chunk if last.
func (w *rawResponse) write(p []byte, last bool) error {
	if w.err != nil {
		return w.err
	}
	if w.sent && !last && len(p) > 0 {
		if _, ok := w.conn.(*net.TCPConn); ok {
			// The body as it is, framed, in one system call (writev).
			w.vec = [3][]byte{append(strconv.AppendUint(w.size[:0], uint64(len(p)), 16), '\r', '\n'), p, crlf}
			w.bufs = w.vec[:]
			_, w.err = w.bufs.WriteTo(w.conn)
			w.vec[1] = nil // p is the caller's
			return w.err
		}
	}
	buf := sseBuffers.get()
	defer sseBuffers.put(buf)
	if !w.sent {
		w.head(buf)
		w.sent = true
	}
	if len(p) > 0 {
		var size [20]byte
		buf.Write(strconv.AppendUint(size[:0], uint64(len(p)), 16))
		buf.Write(crlf)
		buf.Write(p)
		buf.Write(crlf)
	}
	if last {
		buf.Write(lastChunk)
	}
	_, w.err = w.conn.Write(buf.Bytes())
	return w.err
}

// head writes the status line and the headers to b.
func (w *rawResponse) head(b *bytes.Buffer) {
	code := w.status
	if code == 0 {
		code = http.StatusOK
	}
	b.WriteString("HTTP/1.1 ")
	b.WriteString(strconv.Itoa(code))
	b.WriteByte(' ')
	b.WriteString(http.StatusText(code))
	b.Write(crlf)
	h := w.header
	if h.Get("Date") == "" {
		h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "text/plain; charset=utf-8")
	}
	h.Del("Content-Length")
	h.Set("Transfer-Encoding", "chunked")
	if !w.close && w.closing != nil && w.closing() {
		w.close = true
	}
	if w.close {
		h.Set("Connection", "close")
	}
	_ = h.Write(b)
	b.Write(crlf)
}

// reqCleanup is the stack of what a request undoes when it ends: when its
// handler returns, or, for a stream that took its connection over, when
// the stream ends.
type reqCleanup []func()

func (c *reqCleanup) push(f func()) { *c = append(*c, f) }

func (c reqCleanup) run() {
	for i := len(c) - 1; i >= 0; i-- {
		c[i]()
	}
}
