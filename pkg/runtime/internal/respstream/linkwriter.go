package respstream

import (
	"net"
	goruntime "runtime"
	"sync"
	"sync/atomic"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/codec"
)

// linkWriter serializes the frames of all streams on one connection.
// Whoever queues a frame while no write is in progress writes it at once,
// together with whatever others queue meanwhile (one system call for
// several frames, no delay for a lone one). There is no writer goroutine.
type linkWriter struct {
	conn    net.Conn
	onErr   func(error) // the connection failed
	onWrite func()      // a write starts (nil: nothing)

	// streams is how many streams the link holds (muxLink keeps it): a
	// writer yields for company only when there can be some.
	streams atomic.Int64

	mu      sync.Mutex
	flushed sync.Cond // broadcast after every write
	buf     []byte    // queued, not yet being written
	spare   []byte
	writing bool
	queued  int64 // bytes ever queued
	written int64 // bytes ever written
	err     error
}

// send queues frames of stream id, writes if nobody is writing, and
// returns the write offset after them.
func (w *linkWriter) send(id uint64, ms ...codec.Message) (int64, error) {
	return w.queue(func(buf []byte) []byte {
		for _, m := range ms {
			buf = codec.AppendStreamMessage(buf, id, m)
		}
		return buf
	})
}

func (w *linkWriter) queue(add func([]byte) []byte) (int64, error) {
	w.mu.Lock()
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return 0, err
	}
	n := len(w.buf)
	w.buf = add(w.buf)
	w.queued += int64(len(w.buf) - n)
	end := w.queued
	if w.writing {
		w.mu.Unlock()
		return end, nil
	}
	w.writing = true
	if w.streams.Load() > 1 {
		// Streams woken by the same engine step are usually runnable
		// now: letting them queue their frames first makes one write of
		// many. A lone stream's frame (a request's first token at low
		// load, say) does not wait in the run queue for nobody.
		w.mu.Unlock()
		goruntime.Gosched()
		w.mu.Lock()
	}
	for len(w.buf) > 0 && w.err == nil {
		out := w.buf
		w.buf = w.spare[:0]
		w.mu.Unlock()
		if w.onWrite != nil {
			w.onWrite()
		}
		_, err := w.conn.Write(out)
		w.mu.Lock()
		w.spare = nil
		if cap(out) <= maxSpareWriteBuffer {
			w.spare = out[:0]
		}
		w.written += int64(len(out))
		if err != nil && w.err == nil {
			w.err = err
		}
		w.flushed.Broadcast()
	}
	w.writing = false
	err := w.err
	w.mu.Unlock()
	if err != nil {
		w.onErr(err)
		return 0, err
	}
	return end, nil
}

// sendRaw queues frames already encoded (stream ids included) like send.
func (w *linkWriter) sendRaw(frames []byte) (int64, error) {
	return w.queue(func(buf []byte) []byte { return append(buf, frames...) })
}

// wait returns once everything up to offset end is written, or the
// connection failed.
func (w *linkWriter) wait(end int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.written < end && w.err == nil {
		w.flushed.Wait()
	}
	return w.err
}

// fail makes every later send fail and wakes the waiters.
func (w *linkWriter) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.buf = nil
	w.flushed.Broadcast()
	w.mu.Unlock()
}
