package respstream

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/codec"
)

// muxLink is the worker's end of one shared connection.
type muxLink struct {
	pool *Pool
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
	l.w.streams.Store(int64(len(l.streams)))
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
	l.w.streams.Store(int64(len(l.streams)))
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
		o.rc.CallerGone()
	}
}
