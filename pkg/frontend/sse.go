package frontend

import (
	"bytes"
	"net/http"
	"sync"
	"time"

	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/preprocessor"
)

// stream runs the request and answers with server-sent events: the
// chunks and data: [DONE], or what the request's format makes of them.
// Nothing is written until the first chunk (annotation events wait with
// it), so a failure before the first token is a real HTTP error status.
func (x *exchange) stream(req apiRequest, m ServedModel) {
	w := &sseWriter{x: x, ctl: http.NewResponseController(x.w), format: req.streamFormat(), buf: sseBuffers.get()}
	x.rc.OnStreamIdle(w.idle)
	err := req.run(x.rc, m, x.id, w.add)
	w.end(err)
}

// sseWriter writes one request's event stream. Chunks are written to buf
// and sent when the runtime has delivered every output it had received
// (runtime.Context.OnStreamIdle): outputs that arrived together leave in
// one write, a lone one at once. buf comes from a pool and goes back
// after each write, so a stream waiting for its next token holds none.
// mu guards everything below it: a batch completion's prompts stream on
// several goroutines.
type sseWriter struct {
	x      *exchange
	ctl    *http.ResponseController
	format streamFormat // the request's; nil for chunks and [DONE]

	mu        sync.Mutex
	buf       *bytes.Buffer // nil between writes
	committed bool          // the status and headers are sent
	broken    bool          // a write failed: the client is gone
}

// flushLocked writes what is buffered and gives the buffer back.
func (w *sseWriter) flushLocked() error {
	_ = w.ctl.SetWriteDeadline(time.Now().Add(w.x.s.cfg.WriteTimeout))
	_, err := w.x.w.Write(w.buf.Bytes())
	sseBuffers.put(w.buf)
	w.buf = nil
	if err != nil {
		return err
	}
	return w.ctl.Flush()
}

// sendLocked flushes what is buffered once the response is committed;
// after a failed write it kills the request.
func (w *sseWriter) sendLocked() error {
	if w.broken {
		return errClientGone
	}
	if !w.committed || w.buf == nil || w.buf.Len() == 0 {
		return nil
	}
	if err := w.flushLocked(); err != nil {
		w.broken = true
		w.x.clientGone.Store(true)
		w.x.rc.Kill()
		return errClientGone
	}
	return nil
}

func (w *sseWriter) commitLocked() {
	startSSE(w.x.w)
	w.committed = true
}

// idle sends what is buffered: the runtime has delivered every output it
// had received.
func (w *sseWriter) idle() {
	w.mu.Lock()
	defer w.mu.Unlock()
	_ = w.sendLocked()
}

// add buffers one event of the chain (the emit of the request's run).
func (w *sseWriter) add(ev preprocessor.Event) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	x := w.x
	if w.broken {
		return errClientGone
	}
	x.observe(ev)
	if ev.Name == "" && finishes(ev.Data) {
		x.attachWorker(ev.Data)
	}
	if w.buf == nil {
		w.buf = sseBuffers.get()
	}
	if w.format != nil {
		evs := w.format.add(ev)
		if err := writeEvents(w.buf, evs); err != nil {
			return err
		}
		if !w.committed && len(evs) > 0 && ev.Name == "" {
			w.commitLocked() // annotations wait for the first event of the answer
		}
		return nil
	}
	if err := openai.WriteSSE(w.buf, ev.Name, ev.Data); err != nil {
		return err
	}
	if !w.committed && ev.Name == "" {
		w.commitLocked() // the first chunk: annotations before it wait for it
	}
	return nil
}

// end ends the stream after the run returned err: the last events and
// [DONE] (or the format's end), or the failure as the client can still
// be told it.
func (w *sseWriter) end(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	defer func() {
		sseBuffers.put(w.buf)
		w.buf = nil
	}()
	x := w.x
	if err != nil {
		e := x.failure(err)
		if !w.committed && e.kind != ErrCancelled {
			x.fail(e, false)
			return
		}
		if w.committed && w.buf != nil && w.buf.Len() > 0 && !w.broken {
			_ = w.flushLocked()
		}
		x.fail(e, w.committed)
		return
	}
	if !w.committed {
		w.commitLocked()
	}
	if w.buf == nil {
		w.buf = sseBuffers.get()
	}
	if w.format != nil {
		if writeEvents(w.buf, w.format.finish()) != nil {
			x.cancelled()
			return
		}
	} else {
		w.buf.WriteString(openai.SSEDone)
	}
	if w.broken || w.lastLocked() != nil {
		x.cancelled()
		return
	}
	x.g.OK()
}

// lastLocked writes the stream's last bytes so that they leave with the
// end of the response body in one system call, not one for them and one
// for the end: without a flush, net/http sends them and the last chunk
// when the handler returns, and a taken-over connection (detach.go) when
// the stream finishes.
func (w *sseWriter) lastLocked() error {
	_ = w.ctl.SetWriteDeadline(time.Now().Add(w.x.s.cfg.WriteTimeout))
	if d := w.x.detached; d != nil {
		d.resp.holdNextWrite()
	}
	_, err := w.x.w.Write(w.buf.Bytes())
	sseBuffers.put(w.buf)
	w.buf = nil
	return err
}

// writeEvents writes evs to buf.
func writeEvents(buf *bytes.Buffer, evs []sseEvent) error {
	for _, ev := range evs {
		if err := openai.WriteSSE(buf, ev.name, ev.data); err != nil {
			return err
		}
	}
	return nil
}

// sseBuffers recycles the buffers that hold a stream's chunks between
// two writes.
var sseBuffers bufferPool

// bufferPool is a sync.Pool of bytes.Buffers that keeps none larger than
// 64 KiB (a burst that large is rare; its buffer goes to the collector).
type bufferPool struct{ p sync.Pool }

func (p *bufferPool) get() *bytes.Buffer {
	if b, ok := p.p.Get().(*bytes.Buffer); ok {
		return b
	}
	return new(bytes.Buffer)
}

// put takes b back; nil is ignored.
func (p *bufferPool) put(b *bytes.Buffer) {
	if b == nil || b.Cap() > 64<<10 {
		return
	}
	b.Reset()
	p.p.Put(b)
}

// startSSE sends the status and headers of an event stream.
func startSSE(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
}
