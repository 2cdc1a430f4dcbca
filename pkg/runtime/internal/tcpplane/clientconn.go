package tcpplane

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/plane"
	"github.com/dynamo-go/dynamo/pkg/runtime/internal/tcpinfo"
)

// errNotQueued reports a connection that broke before the request was
// handed to it; Send retries on another connection.
var errNotQueued = errors.New("tcpplane: request not queued")

// errPeerGone is the cause of a connection failed because its peer
// stopped answering altogether (see clientConn.dead).
var errPeerGone = errors.New("the peer is gone")

// call is one request in flight on a connection.
type call struct {
	frame  []byte
	result chan error // buffered; receives nil or *plane.AckError
	// abandoned is set when the sender gave up on the call (its ack timed
	// out on a live connection): a call not yet written is skipped; one
	// written keeps its place in pending, and its ack, when it comes, is
	// dropped.
	abandoned atomic.Bool
}

// clientConn is one pipelined connection. writeLoop sends queued frames
// and appends each call to pending just before writing it; readLoop pops
// pending in the same order as acks arrive. When either side fails, done
// is closed and every Send waiting on the connection returns err.
type clientConn struct {
	c     *Client
	addr  string
	nc    net.Conn
	queue chan *call
	load  int // requests reserved by Sends; guarded by Client.mu

	mu      sync.Mutex
	pending []*call   // written, not yet acked, oldest first
	heard   time.Time // the latest ack, or when pending last became non-empty

	once sync.Once
	done chan struct{}
	err  error // set before done is closed
}

func newClientConn(c *Client, addr string, nc net.Conn) *clientConn {
	return &clientConn{
		c:     c,
		addr:  addr,
		nc:    nc,
		queue: make(chan *call, c.cfg.QueueSize),
		done:  make(chan struct{}),
	}
}

// send queues call and waits for its ack, the connection's failure, ctx,
// or the ack timer. When the timer fires on a connection that is alive
// (see dead), only this call fails, with ErrAckTimeout: its peer is slow,
// not gone, and the other calls on the connection go on. On a dead
// connection the timer fails the connection and every call on it.
func (cc *clientConn) send(ctx context.Context, call *call, ackTimer <-chan time.Time) error {
	select {
	case cc.queue <- call:
	case <-cc.done:
		return fmt.Errorf("%w: %w", errNotQueued, cc.err)
	case <-ctx.Done():
		return fmt.Errorf("tcpplane: send to %s: %w", cc.addr, ctx.Err())
	case <-ackTimer:
		return cc.timedOut(fmt.Errorf("%w: write queue to %s full for %v", ErrAckTimeout, cc.addr, cc.c.cfg.AckTimeout))
	}
	select {
	case err := <-call.result:
		return err
	case <-cc.done:
		select {
		case err := <-call.result: // acked just before the failure
			return err
		default:
			return cc.err
		}
	case <-ctx.Done():
		call.abandoned.Store(true)
		return fmt.Errorf("tcpplane: send to %s: %w", cc.addr, ctx.Err())
	case <-ackTimer:
		call.abandoned.Store(true)
		select {
		case err := <-call.result: // acked as the timer fired
			return err
		default:
		}
		return cc.timedOut(fmt.Errorf("%w: no ack from %s within %v", ErrAckTimeout, cc.addr, cc.c.cfg.AckTimeout))
	}
}

// timedOut returns the error of a call whose ack timer fired: err itself
// while the connection is alive, or, when it is dead, the connection's
// failure (ErrConnLost), after failing it.
func (cc *clientConn) timedOut(err error) error {
	if cause := cc.dead(time.Now()); cause != nil {
		cc.fail(fmt.Errorf("%w: %w", err, cause))
		return cc.err
	}
	cc.c.log.Debug("tcpplane: ack timeout on a live connection: the peer is slow", "addr", cc.addr, "err", err)
	return err
}

// dead tells whether the connection's peer is gone rather than slow:
//
//   - its host: data has been in flight to it and its kernel has
//     acknowledged none of it for the ack timeout (a vanished host or a
//     cut network; Linux only, from TCP_INFO);
//   - its process: it has acked nothing for ClientConfig.DeadTimeout
//     while requests waited for their acks.
//
// A peer whose process is only slow (busy, or stopped for a while) is
// neither: its kernel acknowledges, and its acks come in the end. A
// refused or broken connection needs no guess: its reader fails it.
func (cc *clientConn) dead(now time.Time) error {
	if silence, inFlight := tcpinfo.PeerAckSilence(cc.nc); inFlight && silence >= cc.c.cfg.AckTimeout {
		return fmt.Errorf("%w: its host acknowledged nothing for %v", errPeerGone, silence.Round(time.Millisecond))
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if len(cc.pending) > 0 && now.Sub(cc.heard) >= cc.c.cfg.DeadTimeout {
		return fmt.Errorf("%w: no ack for %v", errPeerGone, now.Sub(cc.heard).Round(time.Millisecond))
	}
	return nil
}

func (cc *clientConn) broken() bool {
	select {
	case <-cc.done:
		return true
	default:
		return false
	}
}

// fail breaks the connection once: it records the cause, wakes every
// waiting Send, closes the socket (ending both loops) and leaves the pool.
func (cc *clientConn) fail(cause error) {
	cc.once.Do(func() {
		cc.err = fmt.Errorf("%w: %s: %w", ErrConnLost, cc.addr, cause)
		close(cc.done)
		cc.nc.Close()
		cc.c.remove(cc)
		cc.c.log.Debug("tcpplane: connection lost", "addr", cc.addr, "err", cause)
	})
}

func (cc *clientConn) writeLoop() {
	defer cc.c.wg.Done()
	bw := bufio.NewWriterSize(cc.nc, 32<<10)
	for {
		var first *call
		select {
		case <-cc.done:
			return
		case first = <-cc.queue:
		}
		// Write everything already queued, then flush once.
		for call := first; call != nil; {
			if !call.abandoned.Load() {
				cc.mu.Lock()
				if len(cc.pending) == 0 {
					cc.heard = time.Now() // the silence counts from here
				}
				cc.pending = append(cc.pending, call)
				cc.mu.Unlock()
				if _, err := bw.Write(call.frame); err != nil {
					cc.fail(err)
					return
				}
			}
			select {
			case call = <-cc.queue:
			default:
				call = nil
			}
		}
		if err := bw.Flush(); err != nil {
			cc.fail(err)
			return
		}
	}
}

func (cc *clientConn) readLoop() {
	defer cc.c.wg.Done()
	br := bufio.NewReader(cc.nc)
	var n [4]byte
	for {
		if _, err := io.ReadFull(br, n[:]); err != nil {
			cc.fail(err)
			return
		}
		size := binary.BigEndian.Uint32(n[:])
		if size > maxAckText {
			cc.fail(fmt.Errorf("%w: %d-byte ack", ErrProtocol, size))
			return
		}
		var result error
		if size > 0 {
			text := make([]byte, size)
			if _, err := io.ReadFull(br, text); err != nil {
				cc.fail(err)
				return
			}
			result = &plane.AckError{Text: string(text)}
		}
		cc.mu.Lock()
		var call *call
		if len(cc.pending) > 0 {
			call = cc.pending[0]
			cc.pending[0] = nil
			cc.pending = cc.pending[1:]
		}
		cc.heard = time.Now()
		cc.mu.Unlock()
		if call == nil {
			cc.fail(fmt.Errorf("%w: ack without a request", ErrProtocol))
			return
		}
		call.result <- result // buffered: an abandoned call's ack is dropped with it
	}
}
