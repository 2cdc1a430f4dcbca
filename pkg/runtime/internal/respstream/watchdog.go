package respstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/codec"
	"github.com/dynamo-go/dynamo/pkg/runtime/internal/tcpinfo"
)

// The watchdog of a shared connection, and its handshake.

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
	hello, _ := json.Marshal(muxHello{StreamType: streamTypeResponseMux, Version: MuxVersion, ServerID: key.serverID})
	var acc muxAccept
	err = codec.WriteMessage(conn, codec.Message{Header: hello})
	if err == nil {
		var m codec.Message
		if m, err = codec.ReadMessage(conn, maxControlHeader); err == nil {
			err = json.Unmarshal(m.Header, &acc)
		}
	}
	if err == nil && (acc.StreamType != streamTypeResponseMux || acc.Version != MuxVersion || acc.Window <= 0) {
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
