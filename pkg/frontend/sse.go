package frontend

import (
	"bytes"
	"net/http"
	"time"

	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
	"github.com/dynamo-go/dynamo/pkg/preprocessor"
)

// stream runs the request and answers with server-sent events. Nothing is
// written until the first chunk (annotation events wait with it), so a
// failure before the first token is a real HTTP error status.
func (x *exchange) stream(c *call, m *pipeline.Model) {
	ctl := http.NewResponseController(x.w)
	var buf bytes.Buffer
	committed := false
	flush := func() error {
		_ = ctl.SetWriteDeadline(time.Now().Add(x.s.cfg.WriteTimeout))
		if _, err := x.w.Write(buf.Bytes()); err != nil {
			return err
		}
		buf.Reset()
		return ctl.Flush()
	}
	commit := func() {
		startSSE(x.w)
		committed = true
	}
	err := c.run(x.rc, m, x.id, func(ev preprocessor.Event) error {
		x.observe(ev)
		if ev.Name == "" && finishes(ev.Data) {
			x.attachWorker(ev.Data)
		}
		if err := openai.WriteSSE(&buf, ev.Name, ev.Data); err != nil {
			return err
		}
		if !committed {
			if ev.Name != "" {
				return nil // an annotation: wait for the first chunk
			}
			commit()
		}
		if err := flush(); err != nil {
			x.clientGone.Store(true)
			x.rc.Kill()
			return errClientGone
		}
		return nil
	})
	if err != nil {
		e := x.failure(err)
		if !committed && e.kind != ErrCancelled {
			x.fail(e, false)
			return
		}
		if committed && buf.Len() > 0 {
			_ = flush()
		}
		x.fail(e, committed)
		return
	}
	if !committed {
		commit()
	}
	buf.WriteString(openai.SSEDone)
	if err := flush(); err != nil {
		x.g.Cancelled()
		return
	}
	x.g.OK()
}

// startSSE sends the status and headers of an event stream.
func startSSE(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
}
