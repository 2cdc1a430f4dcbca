package runtime

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/codec"
	"github.com/dynamo-go/dynamo/pkg/runtime/internal/tcpinfo"
)

// The worker's end of shared response connections (docs/protocol.md
// §7.8): one connection per caller (address and server id), dialled when
// the first request needs it, closed when idle, dialled again on demand.

// errLinkClosed is the write error of a shared connection that was closed
// (idle, shut down, or failed).
var errLinkClosed = errors.New("runtime: shared response connection closed")

// errLinkDead makes attach try another connection: the one it found was
// closing.
var errLinkDead = errors.New("runtime: shared response connection is closing")

// errLinkLost: the connection failed while a stream was being opened on
// it.
var errLinkLost = errors.New("runtime: shared response connection failed")

// Why the watchdog gives a shared connection up (§7.8.6).
var (
	// errCallerHostSilent: the caller's host acknowledged nothing of what
	// was outstanding for the connect timeout (it went away, or the
	// network between is cut).
	errCallerHostSilent = errors.New("runtime: the caller's host acknowledged nothing of the data in flight")
	// errCallerSilent: the caller's process answered nothing it was sent
	// for six times the connect timeout (it is stopped or stuck; a live
	// one answers within a second).
	errCallerSilent = errors.New("runtime: the caller sent nothing since frames were written to it")
)

// maxAttach bounds how often a stream is opened again on a new connection
// after the one it was on failed before the caller acknowledged it.
const maxAttach = 3

// unackedPool recycles the buffers in which streams keep their frames
// until the caller acknowledges them.
var unackedPool = sync.Pool{New: func() any { return new([]byte) }}

// maxSpareWriteBuffer bounds the write buffer a shared connection keeps
// between writes (one huge item must not pin its buffer).
const maxSpareWriteBuffer = 1 << 20

// muxPool holds the worker's shared response connections. It starts one
// goroutine per connection (dial, then read) and stops them in close.
type muxPool struct {
	connectTimeout time.Duration
	idleTimeout    time.Duration
	log            *slog.Logger

	ctx    context.Context // ends in close: aborts dials
	cancel context.CancelFunc

	mu     sync.Mutex
	links  map[muxKey]*muxLink
	closed bool
	wg     sync.WaitGroup
}

// muxKey names a caller: its response-stream address and server id.
type muxKey struct{ addr, serverID string }

func newMuxPool(cfg Config, log *slog.Logger) *muxPool {
	ctx, cancel := context.WithCancel(context.Background())
	return &muxPool{
		connectTimeout: cfg.TCPConnectTimeout,
		idleTimeout:    cfg.ResponseMuxIdleTimeout,
		log:            log,
		ctx:            ctx,
		cancel:         cancel,
		links:          make(map[muxKey]*muxLink),
	}
}

// open opens the stream the caller offered in info on the shared
// connection to that caller, dialling it if there is none.
func (p *muxPool) open(rc *Context, info tcpStreamInfo) (*muxOut, error) {
	hs, _ := json.Marshal(handshake{Subject: info.Subject, StreamType: streamTypeResponse})
	o := &muxOut{pool: p, key: muxKey{info.Address, info.Mux.ServerID}, id: info.Mux.StreamID, opening: hs, rc: rc, more: make(chan struct{}, 1)}
	if err := o.attach(); err != nil {
		return nil, err
	}
	return o, nil
}

// link returns the connection to key, once it is usable.
func (p *muxPool) link(rc *Context, key muxKey) (*muxLink, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrRuntimeClosed
	}
	l := p.links[key]
	if l == nil {
		l = &muxLink{pool: p, key: key, ready: make(chan struct{}), streams: make(map[uint64]*muxSlot)}
		l.w.flushed.L = &l.w.mu
		l.w.onErr = l.fail
		l.w.onWrite = l.wrote
		p.links[key] = l
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			l.run()
		}()
	}
	p.mu.Unlock()
	select {
	case <-l.ready:
	case <-rc.Done():
		return nil, context.Cause(rc)
	}
	if l.err != nil {
		return nil, l.err
	}
	return l, nil
}

// forget removes l from the pool if it is still the connection to its
// caller.
func (p *muxPool) forget(l *muxLink) {
	p.mu.Lock()
	if p.links[l.key] == l {
		delete(p.links, l.key)
	}
	p.mu.Unlock()
}

// size returns how many shared connections are open or being dialled.
func (p *muxPool) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// close closes every connection (their streams' requests are killed) and
// waits for their goroutines.
func (p *muxPool) close() {
	p.mu.Lock()
	p.closed = true
	links := make([]*muxLink, 0, len(p.links))
	for _, l := range p.links {
		links = append(links, l)
	}
	p.mu.Unlock()
	p.cancel()
	for _, l := range links {
		l.fail(errLinkClosed)
	}
	p.wg.Wait()
}

// muxLink is the worker's end of one shared connection.
type muxLink struct {
	pool *muxPool
	key  muxKey

	ready  chan struct{} // closed once dialled (or failed: err)
	err    error
	conn   net.Conn
	window int64 // every stream's initial credit, from the caller

	w linkWriter

	// heard is when a frame from the caller last arrived (unix ns): a
	// caller that is behind but reading still sends some (§7.8.4).
	heard atomic.Int64
	// waiting is when the first write since the caller was last heard
	// started (unix ns; 0: none). The watchdog fails the connection when
	// it is older than the silence bound.
	waiting  atomic.Int64
	watchdog *time.Timer
	// inFlight is since when the watchdog has seen data in flight to the
	// caller's host (zero: none); the watchdog's own.
	inFlight time.Time

	mu       sync.Mutex
	streams  map[uint64]*muxSlot // nil once failed
	dead     bool                // takes no new streams
	idle     *time.Timer
	failOnce sync.Once
}

// muxSlot is a stream's place on one connection.
type muxSlot struct {
	o       *muxOut
	acked   chan struct{} // closed when the caller acknowledged the stream
	lost    chan struct{} // closed when the connection failed before that
	isAcked bool          // under the link's mu
	isLost  bool          // under the link's mu: lost is (being) closed
	opened  time.Time     // when the opening frame was queued
}

// run dials the caller, then reads its control frames until the
// connection ends.
func (l *muxLink) run() {
	p := l.pool
	conn, window, err := dialShared(p.ctx, l.key, p.connectTimeout)
	if err == nil {
		l.mu.Lock()
		if l.dead { // the pool closed meanwhile
			err = errLinkClosed
			conn.Close()
		} else {
			l.conn, l.window, l.w.conn = conn, window, conn
		}
		l.mu.Unlock()
	}
	if err != nil {
		l.err = fmt.Errorf("runtime: shared response connection to %s: %w", l.key.addr, err)
		p.forget(l)
		l.mu.Lock()
		l.dead, l.streams = true, nil
		l.mu.Unlock()
		close(l.ready)
		return
	}
	l.heard.Store(time.Now().UnixNano()) // the handshake's answer
	l.mu.Lock()
	if !l.dead {
		l.watchdog = time.AfterFunc(l.pool.connectTimeout/5, l.watch)
	}
	l.mu.Unlock()
	close(l.ready)
	l.read()
}

// wrote notes a write to the caller, who has to answer it.
func (l *muxLink) wrote() {
	l.waiting.CompareAndSwap(0, time.Now().UnixNano())
}

// watch runs every fifth of the connect timeout while the connection is
// up, and fails it when the caller is gone (see gone).
func (l *muxLink) watch() {
	if err := l.gone(time.Now()); err != nil {
		l.fail(err)
		return
	}
	l.mu.Lock()
	if !l.dead {
		l.watchdog.Reset(l.pool.connectTimeout / 5)
	}
	l.mu.Unlock()
}

// gone tells whether the caller went away, two ways:
//
//   - its host: data has been in flight to it for the connect timeout
//     (5 s by default) and its kernel acknowledged none of it for as long
//     (a vanished host or a cut network; Linux only, from TCP_INFO);
//   - its process: it answered nothing it was sent for six times the
//     connect timeout (a live caller answers within a second, §7.8.3),
//     or it has left a stream unacknowledged for as long.
//
// A caller that is only slow (a busy process whose reads lag by seconds,
// its window closed) is neither: its kernel acknowledges, and its
// process answers in the end. The kernel's TCP_USER_TIMEOUT cannot tell
// the two apart: it also ends a connection whose window stays closed that
// long.
func (l *muxLink) gone(now time.Time) error {
	bound := l.pool.connectTimeout
	if silence, inFlight := tcpinfo.PeerAckSilence(l.conn); inFlight {
		if l.inFlight.IsZero() {
			l.inFlight = now
		}
		if now.Sub(l.inFlight) >= bound && silence >= bound {
			return errCallerHostSilent
		}
	} else {
		l.inFlight = time.Time{}
	}
	if since := l.waiting.Load(); since != 0 && now.Sub(time.Unix(0, since)) > callerSilence*bound {
		return errCallerSilent
	}
	// A frame the caller sent before it read our last write can look like
	// its answer; a stream it has not acknowledged for as long tells.
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, slot := range l.streams {
		if !slot.isAcked && now.Sub(slot.opened) > callerSilence*bound {
			return errCallerSilent
		}
	}
	return nil
}

// callerSilence is how many connect timeouts a caller may leave what it
// was sent unanswered before the worker takes it for stopped.
const callerSilence = 6

// dialShared dials a caller and makes the connection shared (§7.8.2). It
// returns the caller's per-stream window.
func dialShared(ctx context.Context, key muxKey, timeout time.Duration) (net.Conn, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d := net.Dialer{KeepAliveConfig: streamKeepAlive}
	conn, err := d.DialContext(ctx, "tcp", key.addr)
	if err != nil {
		return nil, 0, err
	}
	setTCPOptions(conn)
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	hello, _ := json.Marshal(muxHello{StreamType: streamTypeResponseMux, Version: muxVersion, ServerID: key.serverID})
	var acc muxAccept
	err = codec.WriteMessage(conn, codec.Message{Header: hello})
	if err == nil {
		var m codec.Message
		if m, err = codec.ReadMessage(conn, maxControlHeader); err == nil {
			err = json.Unmarshal(m.Header, &acc)
		}
	}
	if err == nil && (acc.StreamType != streamTypeResponseMux || acc.Version != muxVersion || acc.Window <= 0) {
		err = fmt.Errorf("unexpected handshake answer %+v", acc)
	}
	if err == nil && !stop() {
		err = ctx.Err()
	}
	if err != nil {
		conn.Close()
		return nil, 0, err
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, acc.Window, nil
}

// read applies the caller's control frames to their streams until the
// connection ends, then fails the connection. It never blocks on a
// stream.
func (l *muxLink) read() {
	r := bufio.NewReader(l.conn)
	for {
		id, m, err := codec.ReadStreamMessage(r, maxControlHeader)
		if err != nil {
			l.fail(err)
			return
		}
		l.heard.Store(time.Now().UnixNano())
		l.waiting.Store(0)
		l.mu.Lock()
		slot := l.streams[id]
		l.mu.Unlock()
		if slot == nil || len(m.Header) == 0 {
			continue // a stream that ended, or nothing we know
		}
		if m.Header[0] == '{' {
			var g muxGrant
			if json.Unmarshal(m.Header, &g) == nil && g.Window > 0 {
				slot.o.addCredit(g.Window)
			}
			continue
		}
		switch ctrl, _ := decodeControl(m.Header); ctrl {
		case "ack":
			l.mu.Lock()
			if !slot.isAcked && !slot.isLost {
				slot.isAcked = true
				close(slot.acked)
			}
			l.mu.Unlock()
		case "stop":
			slot.o.rc.Stop()
		case "kill":
			slot.o.rc.Kill()
		}
	}
}

// attach gives o a place on the connection and writes its opening frame,
// then the frames the caller has not acknowledged yet (o was on another
// connection that failed). It returns errLinkDead if the connection was
// closing (nothing was written), and errLinkLost if it failed while the
// frames were written.
func (l *muxLink) attach(o *muxOut) error {
	slot := &muxSlot{o: o, acked: make(chan struct{}), lost: make(chan struct{}), opened: time.Now()}
	credit := l.window - int64(len(o.unacked))
	o.mu.Lock()
	o.credit = credit // before the caller can grant more
	o.mu.Unlock()
	l.mu.Lock()
	if l.dead {
		l.mu.Unlock()
		return errLinkDead
	}
	if _, dup := l.streams[o.id]; dup {
		l.mu.Unlock()
		return fmt.Errorf("runtime: stream id %d is already open on the shared connection to %s", o.id, l.key.addr)
	}
	l.streams[o.id] = slot
	if l.idle != nil {
		l.idle.Stop()
	}
	l.mu.Unlock()

	o.link, o.slot = l, slot
	end, err := l.w.send(o.id, codec.Message{Header: o.opening})
	if err == nil && len(o.unacked) > 0 {
		end, err = l.w.sendRaw(o.unacked)
	}
	if err != nil {
		return errLinkLost // the connection failed: the slot is lost
	}
	o.last = end
	return nil
}

// remove forgets a stream; the connection closes after idleTimeout
// without streams.
func (l *muxLink) remove(slot *muxSlot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.streams == nil || l.streams[slot.o.id] != slot {
		return
	}
	delete(l.streams, slot.o.id)
	if len(l.streams) > 0 || l.pool.idleTimeout <= 0 {
		return
	}
	if l.idle == nil {
		l.idle = time.AfterFunc(l.pool.idleTimeout, l.closeIdle)
	} else {
		l.idle.Reset(l.pool.idleTimeout)
	}
}

// closeIdle closes the connection if it still carries no stream.
func (l *muxLink) closeIdle() {
	p := l.pool
	p.mu.Lock() // first, so that no request picks the connection meanwhile
	l.mu.Lock()
	if l.dead || len(l.streams) > 0 {
		l.mu.Unlock()
		p.mu.Unlock()
		return
	}
	l.dead = true
	if p.links[l.key] == l {
		delete(p.links, l.key)
	}
	l.mu.Unlock()
	p.mu.Unlock()
	l.conn.Close() // the reader ends and fails the connection
}

// fail closes the connection. The requests of the streams the caller had
// acknowledged are killed (the caller is gone, or this runtime closes);
// the others will try another connection.
func (l *muxLink) fail(err error) {
	l.failOnce.Do(func() { l.doFail(err) })
}

func (l *muxLink) doFail(err error) {
	l.mu.Lock()
	l.dead = true
	streams := l.streams
	l.streams = nil
	if l.idle != nil {
		l.idle.Stop()
	}
	if l.watchdog != nil {
		l.watchdog.Stop()
	}
	var killed []*muxOut
	var lost []*muxSlot
	for _, slot := range streams {
		if slot.isAcked {
			killed = append(killed, slot.o)
		} else {
			slot.isLost = true
			lost = append(lost, slot)
		}
	}
	conn := l.conn
	l.mu.Unlock()
	if len(killed)+len(lost) > 0 && !errors.Is(err, errLinkClosed) {
		l.pool.log.Warn("runtime: shared response connection failed", "address", l.key.addr, "err", err,
			"streams_ended", len(killed), "streams_moving", len(lost))
	}
	// Out of the pool before the lost streams look for another connection.
	l.pool.forget(l)
	l.w.fail(errLinkClosed)
	if conn != nil {
		conn.Close()
	}
	for _, slot := range lost {
		close(slot.lost)
	}
	for _, o := range killed {
		o.rc.kill(ErrCallerGone)
	}
}
