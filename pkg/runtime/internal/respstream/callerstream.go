package respstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/codec"
)

// errStreamClosed marks a stream whose call ended: frames still arriving
// for it are dropped.
var errStreamClosed = errors.New("runtime: stream closed")

// errWindowOverrun fails a stream whose worker sent more than its credit.
var errWindowOverrun = errors.New("flow-control window overrun")

// queuePool recycles the streams' frame queues.
var queuePool = sync.Pool{New: func() any { return new([]codec.Message) }}

// putQueue clears q (its frames go to the collector) and pools it,
// unless it is nil or grew beyond maxPooledQueue.
func putQueue(q []codec.Message) {
	if q == nil || cap(q) > maxPooledQueue {
		return
	}
	clear(q) // past len, entries are zero already
	q = q[:0]
	queuePool.Put(&q)
}

// maxPooledQueue bounds the queues kept for reuse.
const maxPooledQueue = 1024

// muxStream is one stream on a shared connection, from the opening frame
// until the call ends.
type muxStream struct {
	mc      *muxConn
	id      uint64
	p       *Pending
	window  int64
	limit   int64         // queued bytes beyond which the worker overran its credit
	timeout time.Duration // orphan bound (<= 0: none)
	signal  chan struct{} // a frame or a failure arrived

	mu       sync.Mutex
	queue    []codec.Message
	head     int
	queued   int64     // bytes in queue
	consumed int64     // bytes taken since the last grant
	heard    time.Time // the last frame from the worker
	err      error     // the stream ended (after the queue drains)

	killSent atomic.Bool
	orphan   *time.Timer
}

// frameCost is what a frame costs its stream's credit: its encoded size,
// stream id included.
func frameCost(m codec.Message) int64 {
	return int64(codec.StreamIDSize + m.Size())
}

// deliver queues a frame from the connection's reader; it never blocks.
func (st *muxStream) deliver(m codec.Message) {
	st.mu.Lock()
	if st.err != nil {
		st.mu.Unlock()
		return
	}
	st.heard = time.Now()
	if len(m.Data) == 0 && bytes.Equal(m.Header, ctrlReset) {
		st.err = ErrReset
	} else {
		st.queued += frameCost(m)
		if st.queued > st.limit {
			st.err = errWindowOverrun
			st.queue, st.head, st.queued = nil, 0, 0
		} else {
			if st.queue == nil {
				st.queue = *queuePool.Get().(*[]codec.Message)
			}
			st.queue = append(st.queue, m)
		}
	}
	overrun := st.err == errWindowOverrun
	st.mu.Unlock()
	st.wake()
	if overrun {
		st.mc.remove(st.id, true)
		st.sendKill()
	}
}

func (st *muxStream) wake() {
	select {
	case st.signal <- struct{}{}:
	default:
	}
}

// fail ends the stream with err once the frames before it are taken.
func (st *muxStream) fail(err error) {
	st.mu.Lock()
	if st.err == nil {
		st.err = err
	}
	st.mu.Unlock()
	st.wake()
}

func (st *muxStream) Ready() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.head < len(st.queue)
}

func (st *muxStream) Next(rc Call) (codec.Message, error) {
	for {
		st.mu.Lock()
		if st.head < len(st.queue) {
			m := st.queue[st.head]
			st.queue[st.head] = codec.Message{}
			if st.head++; st.head == len(st.queue) {
				// Drained: the queue goes back to the pool, so a stream
				// waiting for its next frame holds none.
				putQueue(st.queue)
				st.queue, st.head = nil, 0
			}
			cost := frameCost(m)
			st.queued -= cost
			st.consumed += cost
			var grant int64
			if st.consumed >= st.window/2 {
				grant, st.consumed = st.consumed, 0
			}
			st.mu.Unlock()
			if grant > 0 {
				st.grant(grant)
			}
			return m, nil
		}
		if err := st.err; err != nil {
			st.mu.Unlock()
			return codec.Message{}, err
		}
		heard := st.heard
		st.mu.Unlock()

		// Once the instance left discovery, the stream may stay silent
		// only for the orphan timeout.
		var gone <-chan struct{}
		var silence <-chan time.Time
		if st.timeout > 0 {
			left := st.p.leftAt()
			if left.IsZero() && st.p.gone.Err() != nil {
				left = time.Now() // released: not expected while reading
			}
			if !left.IsZero() {
				wait := time.Until(later(left, heard).Add(st.timeout))
				if wait <= 0 {
					return codec.Message{}, OrphanedError{st.timeout}
				}
				if st.orphan == nil {
					st.orphan = time.NewTimer(wait)
				} else {
					st.orphan.Reset(wait)
				}
				silence = st.orphan.C
			} else {
				gone = st.p.gone.Done()
			}
		}
		select {
		case <-st.signal:
		case <-rc.Killed():
			return codec.Message{}, context.Cause(rc)
		case <-gone:
		case <-silence:
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (st *muxStream) grant(n int64) {
	hdr, _ := json.Marshal(muxGrant{Window: n})
	st.mc.send(st.id, hdr)
}

// sendKill tells the worker to abandon the stream, once.
func (st *muxStream) sendKill() {
	if st.killSent.CompareAndSwap(false, true) {
		st.mc.send(st.id, ctrlKill)
	}
}

// Stop asks the worker to finish the stream early.
func (st *muxStream) Stop() { st.mc.send(st.id, ctrlStop) }

// Kill tells the worker to abandon the stream (once).
func (st *muxStream) Kill() { st.sendKill() }

// Abort needs to do nothing: Next watches the kill itself.
func (st *muxStream) Abort() {}

func (st *muxStream) Close(ended bool) {
	if st.orphan != nil {
		st.orphan.Stop()
	}
	st.mu.Lock()
	q := st.queue
	st.queue, st.head, st.err = nil, 0, errStreamClosed
	st.mu.Unlock()
	putQueue(q)
	st.mc.remove(st.id, !ended)
	if !ended {
		st.sendKill()
	}
}
