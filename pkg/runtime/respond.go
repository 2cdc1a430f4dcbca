package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/codec"
	"github.com/dynamo-go/dynamo/pkg/runtime/internal/respstream"
)

// ErrCallerGone is the cause of a worker-side Context killed because the
// caller's response connection failed.
var ErrCallerGone = NewError(TypeDisconnected, "caller closed the response stream")

// streamRequest is a request's Context as its response stream sees it
// (respstream.Request).
type streamRequest struct{ *Context }

// CallerGone kills the request: the caller's response connection failed.
func (r streamRequest) CallerGone() { r.kill(ErrCallerGone) }

// responder writes the frames of one response stream.
type responder struct {
	out     respstream.Out
	rc      *Context
	metrics *endpointMetrics
	maxSize int // largest frame the caller accepts

	mu        sync.Mutex
	started   bool   // the prologue was sent
	scratch   []byte // the item frame being written (write copies it)
	frames    [2]codec.Message
	firstSent time.Time
	received  time.Time
}

func (r *responder) write(ms ...codec.Message) error {
	n, err := r.out.Write(ms...)
	if err != nil {
		r.rc.kill(ErrCallerGone)
		return fmt.Errorf("runtime: response stream: %w", err)
	}
	r.metrics.responseBytes.Add(float64(n))
	return nil
}

// prologue returns the prologue frame (success when e is nil).
func (r *responder) prologue(e *Error) codec.Message {
	r.started = true
	if e == nil {
		return codec.Message{Header: prologueOK}
	}
	text := e.Error()
	hdr, _ := json.Marshal(prologue{Error: &text, ErrorDetail: e})
	return codec.Message{Header: hdr}
}

var prologueOK = []byte(`{"error":null}`)

// emit sends one item; it is the emit function handed to the Handler.
func (r *responder) emit(item []byte) error {
	if r.rc.IsKilled() {
		return context.Cause(r.rc)
	}
	if !json.Valid(item) {
		return NewError(TypeInvalidArgument, "runtime: response item is not JSON")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.scratch = appendDataFrame(r.scratch[:0], item)
	data := r.scratch
	if len(data)+24 > r.maxSize {
		return NewError(TypeInvalidArgument, "runtime: response item of %d bytes exceeds the %d-byte frame limit", len(item), r.maxSize)
	}
	frames := r.frames[:0]
	if !r.started {
		frames = append(frames, r.prologue(nil)) // with the first item, in one write
	}
	frames = append(frames, codec.Message{Data: data})
	if err := r.write(frames...); err != nil {
		r.metrics.errors.WithLabelValues("publish_response").Inc()
		return err
	}
	if r.firstSent.IsZero() {
		r.firstSent = time.Now()
		r.metrics.firstResponse.Observe(r.firstSent.Sub(r.received).Seconds())
	}
	return nil
}

// finish ends the stream after the handler returned herr. It reports
// whether the frames it sent ended the stream (sentinel, error prologue).
func (r *responder) finish(herr error) (ended bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rc.IsKilled() {
		return false // the caller is gone or asked to abandon: no final frames
	}
	var frames []codec.Message
	if herr != nil {
		if !r.started {
			r.metrics.errors.WithLabelValues("generate").Inc()
			return r.write(r.prologue(asError(herr))) == nil
		}
		frame, _ := errorFrame(asError(herr))
		frames = append(frames, codec.Message{Data: frame})
	} else if !r.started {
		frames = append(frames, r.prologue(nil))
	}
	// The final frames go out in one write.
	frames = append(frames, codec.Message{Data: completeFinalFrame}, codec.Message{Header: ctrlSentinel})
	if err := r.write(frames...); err != nil {
		r.metrics.errors.WithLabelValues("publish_final").Inc()
		return false
	}
	return true
}
