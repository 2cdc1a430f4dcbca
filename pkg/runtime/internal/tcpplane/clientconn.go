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
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/plane"
)

// errNotQueued reports a connection that broke before the request was
// handed to it; Send retries on another connection.
var errNotQueued = errors.New("tcpplane: request not queued")

// call is one request in flight on a connection.
type call struct {
	frame  []byte
	result chan error // buffered; receives nil or *plane.AckError
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
	pending []*call // written, not yet acked, oldest first

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
// or the ack timer.
func (cc *clientConn) send(ctx context.Context, call *call, ackTimer <-chan time.Time) error {
	select {
	case cc.queue <- call:
	case <-cc.done:
		return fmt.Errorf("%w: %w", errNotQueued, cc.err)
	case <-ctx.Done():
		return fmt.Errorf("tcpplane: send to %s: %w", cc.addr, ctx.Err())
	case <-ackTimer:
		err := fmt.Errorf("%w: write queue to %s full for %v", ErrAckTimeout, cc.addr, cc.c.cfg.AckTimeout)
		cc.fail(err)
		return err
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
		return fmt.Errorf("tcpplane: send to %s: %w", cc.addr, ctx.Err())
	case <-ackTimer:
		err := fmt.Errorf("%w: no ack from %s within %v", ErrAckTimeout, cc.addr, cc.c.cfg.AckTimeout)
		cc.fail(err)
		return err
	}
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
			cc.mu.Lock()
			cc.pending = append(cc.pending, call)
			cc.mu.Unlock()
			if _, err := bw.Write(call.frame); err != nil {
				cc.fail(err)
				return
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
		cc.mu.Unlock()
		if call == nil {
			cc.fail(fmt.Errorf("%w: ack without a request", ErrProtocol))
			return
		}
		call.result <- result
	}
}
