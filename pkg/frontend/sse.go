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
	format := req.streamFormat()
	ctl := http.NewResponseController(x.w)
	// Chunks are written to buf and sent when the runtime has delivered
	// every output it had received (runtime.Context.OnStreamIdle): outputs that
	// arrived together leave in one write, a lone one at once. buf comes
	// from a pool and goes back after each write, so a stream waiting for
	// its next token holds none. mu guards buf and the writer: a batch
	// completion's prompts stream on several goroutines.
	var (
		mu        sync.Mutex
		buf       = sseBuffers.get()
		committed bool
		broken    bool // a write failed: the client is gone
	)
	flush := func() error {
		_ = ctl.SetWriteDeadline(time.Now().Add(x.s.cfg.WriteTimeout))
		_, err := x.w.Write(buf.Bytes())
		sseBuffers.put(buf)
		buf = nil
		if err != nil {
			return err
		}
		return ctl.Flush()
	}
	// send flushes what is buffered once the response is committed; after
	// a failed write it kills the request. Called with mu held.
	send := func() error {
		if broken {
			return errClientGone
		}
		if !committed || buf == nil || buf.Len() == 0 {
			return nil
		}
		if err := flush(); err != nil {
			broken = true
			x.clientGone.Store(true)
			x.rc.Kill()
			return errClientGone
		}
		return nil
	}
	commit := func() {
		startSSE(x.w)
		committed = true
	}
	x.rc.OnStreamIdle(func() {
		mu.Lock()
		defer mu.Unlock()
		_ = send()
	})
	err := req.run(x.rc, m, x.id, func(ev preprocessor.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if broken {
			return errClientGone
		}
		x.observe(ev)
		if ev.Name == "" && finishes(ev.Data) {
			x.attachWorker(ev.Data)
		}
		if buf == nil {
			buf = sseBuffers.get()
		}
		if format != nil {
			evs := format.add(ev)
			if err := writeEvents(buf, evs); err != nil {
				return err
			}
			if !committed && len(evs) > 0 {
				commit()
			}
			return nil
		}
		if err := openai.WriteSSE(buf, ev.Name, ev.Data); err != nil {
			return err
		}
		if !committed && ev.Name == "" {
			commit() // the first chunk: annotations before it wait for it
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	defer func() { // under mu
		sseBuffers.put(buf)
		buf = nil
	}()
	if err != nil {
		e := x.failure(err)
		if !committed && e.kind != ErrCancelled {
			x.fail(e, false)
			return
		}
		if committed && buf != nil && buf.Len() > 0 && !broken {
			_ = flush()
		}
		x.fail(e, committed)
		return
	}
	if !committed {
		commit()
	}
	if buf == nil {
		buf = sseBuffers.get()
	}
	if format != nil {
		if writeEvents(buf, format.finish()) != nil {
			x.cancelled()
			return
		}
	} else {
		buf.WriteString(openai.SSEDone)
	}
	if broken || flush() != nil {
		x.cancelled()
		return
	}
	x.g.OK()
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
