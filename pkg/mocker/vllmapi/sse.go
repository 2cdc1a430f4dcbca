package vllmapi

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// sseAnswer is a streamed answer's server-sent events, as vLLM sends
// them: the headers at once, each event flushed as it is sent, and
// "data: [DONE]" last.
type sseAnswer struct {
	w   http.ResponseWriter
	ctl *http.ResponseController
}

// openSSE sends the headers of an event stream.
func openSSE(w http.ResponseWriter) *sseAnswer {
	s := &sseAnswer{w: w, ctl: http.NewResponseController(w)}
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_ = s.ctl.Flush()
	return s
}

// send writes v as one data event.
func (s *sseAnswer) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(s.w, "data: %s\n\n", b); err != nil {
		return err
	}
	return s.ctl.Flush()
}

// end sends the engine's error as vLLM's error event when err is set,
// else what last sends (the usage chunk, say), then [DONE].
func (s *sseAnswer) end(err error, last func()) {
	if err != nil {
		status, msg := engineError(err)
		_ = s.send(newError(status, msg, ""))
	} else if last != nil {
		last()
	}
	_, _ = fmt.Fprint(s.w, "data: [DONE]\n\n")
	_ = s.ctl.Flush()
}

// completionTokens is what the answer's choices generated, together.
func (a *answer) completionTokens() int {
	n := 0
	for _, c := range a.choices {
		n += len(c.ids)
	}
	return n
}
