package respstream

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/codec"
)

// muxOut is the worker's end of one stream on a shared connection. Until
// the caller acknowledges the stream, it keeps the frames it wrote: if
// the connection fails before that, the stream is opened again on a new
// connection and they are written again. The caller cannot get them
// twice: it establishes a subject once, and answers a second opening with
// a kill.
type muxOut struct {
	pool    *Pool
	key     muxKey
	id      uint64
	opening []byte // the opening frame's header
	rc      Request

	// Used by the request's goroutine only (the responder serializes
	// write and close).
	link     *muxLink
	slot     *muxSlot
	acked    bool
	unacked  []byte // the frames written since the opening, encoded, until the ack
	attaches int
	last     int64 // the write offset after this stream's latest frame

	mu     sync.Mutex
	credit int64
	more   chan struct{} // credit arrived
}

// attach opens the stream on the caller's connection, dialling it if
// needed; on maxAttach connections at most in all.
func (o *muxOut) attach() error {
	for closing := 0; ; {
		if o.attaches >= maxAttach {
			return fmt.Errorf("runtime: shared response connections to %s failed %d times", o.key.addr, maxAttach)
		}
		l, err := o.pool.link(o.rc, o.key)
		if err != nil {
			return err
		}
		switch err := l.attach(o); {
		case err == nil:
			o.attaches++
			return nil
		case errors.Is(err, errLinkLost):
			o.attaches++
		case errors.Is(err, errLinkDead) && closing < maxAttach:
			closing++ // closing, not yet out of the pool: look again
		default:
			return err
		}
	}
}

// sync notes the caller's ack, or moves the stream to a new connection if
// its connection failed before the ack.
func (o *muxOut) sync() error {
	if o.acked {
		return nil
	}
	select {
	case <-o.slot.acked:
		o.gotAck()
		return nil
	case <-o.slot.lost:
		return o.attach()
	default:
		return nil
	}
}

// gotAck notes the caller's ack: the kept frames are not needed anymore.
func (o *muxOut) gotAck() {
	o.acked = true
	if o.unacked != nil && cap(o.unacked) <= maxSpareWriteBuffer {
		b := o.unacked[:0]
		unackedPool.Put(&b)
	}
	o.unacked = nil
}

func (o *muxOut) addCredit(n int64) {
	o.mu.Lock()
	o.credit += n
	o.mu.Unlock()
	select {
	case o.more <- struct{}{}:
	default:
	}
}

// write sends one frame once the stream has credit; it waits for credit
// until the request is killed (a failed connection kills it too, once
// the caller acknowledged the stream).
func (o *muxOut) Write(ms ...codec.Message) (int, error) {
	cost := 0
	for _, m := range ms {
		cost += codec.StreamIDSize + m.Size()
	}
	for {
		if err := o.sync(); err != nil {
			return 0, err
		}
		o.mu.Lock()
		if o.credit > 0 {
			o.credit -= int64(cost)
			o.mu.Unlock()
			break
		}
		o.mu.Unlock()
		var acked <-chan struct{}
		if !o.acked {
			acked = o.slot.acked
		}
		select {
		case <-o.more:
		case <-acked:
		case <-o.slot.lost:
		case <-o.rc.Killed():
			return 0, context.Cause(o.rc)
		}
	}
	if !o.acked {
		if o.unacked == nil {
			o.unacked = *unackedPool.Get().(*[]byte)
		}
		for _, m := range ms {
			o.unacked = codec.AppendStreamMessage(o.unacked, o.id, m)
		}
	}
	end, err := o.link.w.send(o.id, ms...)
	if err == nil {
		o.last = end
		return cost, nil
	}
	if o.acked {
		return 0, err
	}
	// The connection failed before the ack: the frame is kept, and goes
	// out again on the next connection.
	if err := o.sync(); err != nil {
		return 0, err
	}
	return cost, nil
}

func (o *muxOut) HandlerDone() {}

// close ends the stream. If the final frames ended it, it waits for the
// caller's ack (moving the stream if its connection fails first), so
// that they are not lost with a dead connection; otherwise (the request
// was killed) it sends a reset. Then it waits until its frames are
// written.
func (o *muxOut) Close(ended bool) {
	if ended {
		for !o.acked {
			select {
			case <-o.slot.acked:
				o.gotAck()
			case <-o.slot.lost:
				if o.attach() != nil {
					ended = false
				}
			case <-o.rc.Killed():
				ended = false
			}
			if !ended {
				break
			}
		}
	}
	if !ended {
		if end, err := o.link.w.send(o.id, codec.Message{Header: ctrlReset}); err == nil {
			o.last = end
		}
	}
	_ = o.link.w.wait(o.last)
	o.link.remove(o.slot)
}
