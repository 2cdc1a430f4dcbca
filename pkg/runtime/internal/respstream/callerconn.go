package respstream

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/codec"
)

// The caller's end of shared response connections (docs/protocol.md §7.8).
//
// One goroutine reads each shared connection (the one that read its
// handshake) and hands every frame to its stream's queue; it never waits
// for a consumer. The call reading a stream takes the frames from the
// queue and returns flow-control credit to the worker as its consumer
// takes them, so each queue holds at most about one window: a slow
// consumer stalls only its own stream, at the worker.

// muxConnReadBuffer is the read buffer of a shared connection: it carries
// the frames of many streams, often several per write.
const muxConnReadBuffer = 64 << 10

// maxDeadIDs bounds the ids a shared connection remembers having killed.
const maxDeadIDs = 4096

// muxConn is the caller's end of one shared response connection.
type muxConn struct {
	s    *Server
	conn net.Conn

	wmu sync.Mutex // serializes writes
	out []byte     // the reader's frames to the worker, sent when it has read all it has
	// sent is when this side last wrote to the worker (unix ns).
	// unanswered: the reader read frames since; armed: a keep-going
	// frame is due (keepGoing's timer runs). See read.
	sent       atomic.Int64
	unanswered bool
	armed      atomic.Bool
	keepGoing  *time.Timer

	mu      sync.Mutex
	streams map[uint64]*muxStream // open streams; nil once the connection failed
	// dead holds ids this side killed whose end the worker has not sent
	// yet: their frames are dropped without another kill.
	dead map[uint64]struct{}
}

// serveShared accepts a shared connection whose handshake hs was read,
// and reads it until it ends.
func (s *Server) serveShared(conn net.Conn, hs firstFrame) {
	defer conn.Close()
	if hs.Version != MuxVersion || hs.ServerID != s.serverID {
		s.log.Debug("runtime: refused a shared response connection", "remote", conn.RemoteAddr(), "version", hs.Version, "server_id", hs.ServerID)
		return
	}
	ack, _ := json.Marshal(muxAccept{StreamType: streamTypeResponseMux, Version: MuxVersion, Window: int64(s.window)})
	_ = conn.SetWriteDeadline(time.Now().Add(handshakeTimeout))
	if err := codec.WriteMessage(conn, codec.Message{Header: ack}); err != nil {
		s.log.Debug("runtime: shared response connection failed in its handshake", "remote", conn.RemoteAddr(), "err", err)
		return
	}
	_ = conn.SetWriteDeadline(time.Time{})
	mc := &muxConn{s: s, conn: conn, streams: make(map[uint64]*muxStream), dead: make(map[uint64]struct{})}
	s.mu.Lock()
	s.shared[mc] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.shared, mc)
		s.mu.Unlock()
	}()
	mc.read()
}

// SharedConns returns how many shared connections the server holds.
func (s *Server) SharedConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.shared)
}

// BreakShared closes the shared connections the server holds, as a
// network failure would (their streams fail).
func (s *Server) BreakShared() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for mc := range s.shared {
		mc.conn.Close()
	}
}

// read dispatches the connection's frames until it fails. The frames it
// answers with (acks, kills) go out together before it reads from the
// connection again, that is once it has handled every complete frame it
// has buffered (or has queued a lot, or has written nothing for
// muxKeepGoing while frames kept coming). Whatever it reads is answered
// within muxKeepGoing: a reader about to wait for the worker with nothing
// to answer writes a keep-going frame on stream 0, at once if it has
// written nothing for muxKeepGoing, else when that much time has passed;
// one that reads on without a pause does so every muxKeepGoing. A live
// caller so tells the worker that it reads, however slowly (§7.8.3).
func (mc *muxConn) read() {
	r := bufio.NewReaderSize(mc.conn, muxConnReadBuffer)
	mc.sent.Store(time.Now().UnixNano())
	defer func() {
		if t := mc.timer(); t != nil {
			t.Stop()
		}
	}()
	for {
		switch {
		case !frameBuffered(r):
			if mc.unanswered && len(mc.out) == 0 {
				mc.answer()
			}
			if len(mc.out) > 0 {
				mc.flush()
			}
		case len(mc.out) >= maxQueuedReplies:
			mc.flush()
		case mc.unanswered && time.Since(time.Unix(0, mc.sent.Load())) >= muxKeepGoing:
			// A steady flow never leaves the buffer without a whole
			// frame: answer (and send what is queued) once a second.
			if len(mc.out) == 0 {
				mc.queue(0, ctrlAck)
			}
			mc.flush()
		}
		id, m, err := codec.ReadStreamMessage(r, mc.s.maxSize)
		if err != nil {
			mc.failed(err)
			return
		}
		mc.unanswered = true
		if id == 0 {
			continue // reserved for the connection; nothing from a worker in version 2
		}
		mc.mu.Lock()
		st := mc.streams[id]
		mc.mu.Unlock()
		if st != nil {
			st.deliver(m)
			continue
		}
		mc.unknown(id, m)
	}
}

// answer makes sure what the reader read is answered: a keep-going frame
// now if nothing was written for muxKeepGoing, else one when that time is
// up (unless the reader writes something first).
func (mc *muxConn) answer() {
	since := time.Since(time.Unix(0, mc.sent.Load()))
	if since >= muxKeepGoing {
		mc.queue(0, ctrlAck)
		return
	}
	if mc.armed.Swap(true) {
		return
	}
	if t := mc.timer(); t != nil {
		t.Reset(muxKeepGoing - since)
		return
	}
	t := time.AfterFunc(muxKeepGoing-since, mc.sendKeepGoing)
	mc.mu.Lock()
	mc.keepGoing = t
	mc.mu.Unlock()
}

func (mc *muxConn) timer() *time.Timer {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	return mc.keepGoing
}

// sendKeepGoing is the timer's keep-going frame.
func (mc *muxConn) sendKeepGoing() {
	if !mc.armed.Swap(false) {
		return
	}
	if time.Since(time.Unix(0, mc.sent.Load())) < muxKeepGoing/2 {
		return // the reader wrote meanwhile
	}
	mc.sent.Store(time.Now().UnixNano())
	mc.write(keepGoingFrame)
}

// keepGoingFrame is the caller's keep-going frame: "ack" on stream 0.
var keepGoingFrame = codec.AppendStreamMessage(nil, 0, codec.Message{Header: ctrlAck})

// unknown handles a frame for an id with no open stream: an opening
// frame, or a frame of a stream this side has given up.
func (mc *muxConn) unknown(id uint64, m codec.Message) {
	if len(m.Data) == 0 && isStreamEnd(m.Header) {
		mc.mu.Lock()
		delete(mc.dead, id)
		mc.mu.Unlock()
		return
	}
	mc.mu.Lock()
	_, dead := mc.dead[id]
	mc.mu.Unlock()
	if dead {
		return
	}
	var hs handshake
	if len(m.Data) == 0 && len(m.Header) > 0 && m.Header[0] == '{' && decodeHandshake(m.Header, &hs) == nil && hs.Subject != "" {
		if mc.s.open(mc, id, hs) {
			mc.queue(id, ctrlAck)
			return
		}
	}
	mc.kill(id)
}

// maxQueuedReplies is how many bytes of answers the reader holds back at
// most.
const maxQueuedReplies = 16 << 10

// frameBuffered reports whether r holds a complete stream frame, so that
// reading it does not touch the connection.
func frameBuffered(r *bufio.Reader) bool {
	const prefix = codec.StreamIDSize + codec.PrefixSize
	n := r.Buffered()
	if n < prefix {
		return false
	}
	p, _ := r.Peek(prefix)
	hl := binary.BigEndian.Uint64(p[codec.StreamIDSize:])
	bl := binary.BigEndian.Uint64(p[codec.StreamIDSize+8:])
	rest := uint64(n - prefix)
	return hl <= rest && bl <= rest-hl
}

// queue adds a frame to the reader's next write.
func (mc *muxConn) queue(id uint64, header []byte) {
	mc.out = codec.AppendStreamMessage(mc.out, id, codec.Message{Header: header})
}

// muxKeepGoing is how long the caller takes at most to answer what it
// reads (a fifth of the worker's 5 s silence bound).
const muxKeepGoing = time.Second

// flush writes the reader's queued frames (see send).
func (mc *muxConn) flush() {
	mc.sent.Store(time.Now().UnixNano())
	mc.unanswered = false
	mc.write(mc.out)
	if cap(mc.out) > muxConnReadBuffer {
		mc.out = nil
	} else {
		mc.out = mc.out[:0]
	}
}

// isStreamEnd reports whether a header-only frame ends a stream for the
// worker: the sentinel, a reset, or an error prologue.
func isStreamEnd(h []byte) bool {
	return bytes.Equal(h, ctrlSentinel) || bytes.Equal(h, ctrlReset) ||
		(bytes.HasPrefix(h, []byte(`{"error":`)) && !bytes.HasPrefix(h, []byte(`{"error":null`)))
}

// add opens a stream for p on the connection; nil if it has failed.
func (mc *muxConn) add(id uint64, p *Pending) *muxStream {
	st := &muxStream{
		mc:      mc,
		id:      id,
		p:       p,
		window:  int64(mc.s.window),
		limit:   int64(mc.s.window) + int64(mc.s.maxSize) + 128,
		timeout: mc.s.orphanTimeout,
		signal:  make(chan struct{}, 1),
		heard:   time.Now(),
	}
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if mc.streams == nil {
		return nil
	}
	if _, dup := mc.streams[id]; dup {
		return nil
	}
	mc.streams[id] = st
	return st
}

// remove forgets stream id; killed records that this side killed it.
func (mc *muxConn) remove(id uint64, killed bool) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if mc.streams == nil {
		return
	}
	delete(mc.streams, id)
	if killed {
		if len(mc.dead) >= maxDeadIDs {
			clear(mc.dead) // a worker that never ends its streams
		}
		mc.dead[id] = struct{}{}
	}
}

// kill tells the worker to abandon stream id, which this side does not
// know (it is the reader's); later frames for it are dropped.
func (mc *muxConn) kill(id uint64) {
	mc.mu.Lock()
	if len(mc.dead) >= maxDeadIDs {
		clear(mc.dead)
	}
	mc.dead[id] = struct{}{}
	mc.mu.Unlock()
	mc.queue(id, ctrlKill)
}

// send writes one header-only frame for stream id. A failed write may
// have left part of a frame, so it closes the connection (its reader then
// fails every stream on it, and the line says why): it gives up only
// after sharedWriteTimeout.
func (mc *muxConn) send(id uint64, header []byte) {
	mc.write(codec.AppendStreamMessage(make([]byte, 0, codec.StreamIDSize+codec.PrefixSize+len(header)), id, codec.Message{Header: header}))
}

// sharedWriteTimeout bounds a write to a worker's shared connection: the
// worker's own bound on a caller that answers nothing (six of its 5 s
// connect timeouts). The worker reads its connection at all times, but a
// process as busy as one holding 10,000 streams on two cores can leave
// its reader unscheduled for more than a second, and a second was the
// bound: the caller then closed a live connection and every stream on it
// failed, the worker seeing "connection reset by peer"
// (TestSharedConnectionOutlastsALateReader).
const sharedWriteTimeout = 30 * time.Second

func (mc *muxConn) write(buf []byte) {
	mc.wmu.Lock()
	defer mc.wmu.Unlock()
	_ = mc.conn.SetWriteDeadline(time.Now().Add(sharedWriteTimeout))
	if _, err := mc.conn.Write(buf); err != nil {
		if n := mc.openStreams(); n > 0 && !errors.Is(err, net.ErrClosed) {
			mc.s.log.Warn("runtime: shared response connection to a worker closed: a control frame could not be written", "err", err, "streams_failed", n)
		}
		mc.conn.Close()
	}
}

// failed ends the connection after its reader's error, saying so when it
// had streams in flight: a worker's connection lost in the middle of its
// answers is worth a line, at this end too.
func (mc *muxConn) failed(err error) {
	if n := mc.openStreams(); n > 0 && !errors.Is(err, net.ErrClosed) {
		mc.s.log.Warn("runtime: shared response connection from a worker failed", "err", err, "streams_failed", n)
	}
	mc.fail(err)
}

// openStreams counts the streams open on the connection.
func (mc *muxConn) openStreams() int {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	return len(mc.streams)
}

// fail ends every stream of the connection with err: the connection
// broke or ended.
func (mc *muxConn) fail(err error) {
	mc.mu.Lock()
	streams := mc.streams
	mc.streams = nil
	mc.mu.Unlock()
	for _, st := range streams {
		st.fail(err)
	}
	mc.conn.Close()
}
