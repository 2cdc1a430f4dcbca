package runtime

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/codec"
)

// ErrCallerGone is the cause of a worker-side Context killed because the
// caller's response connection failed.
var ErrCallerGone = NewError(TypeDisconnected, "caller closed the response stream")

// postSentinelWait bounds how long a worker waits for the caller to close
// the connection after the final frames.
const postSentinelWait = 10 * time.Second

// responseOut is the worker's end of one response stream: a call-home
// connection of its own (connOut) or a stream on a shared connection
// (muxOut).
type responseOut interface {
	// write sends frames of the stream, in one write when it can, and
	// returns their size on the wire. On a shared connection it may wait
	// for flow-control credit, until the request is killed. The messages
	// are not used after write returns.
	write(ms ...codec.Message) (int, error)
	// handlerDone is called when the handler returned, before the final
	// frames.
	handlerDone()
	// close ends the stream after the final frames; ended tells whether
	// they ended it (sentinel or error prologue) or the request was
	// killed.
	close(ended bool)
}

// responder writes the frames of one response stream.
type responder struct {
	out     responseOut
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

// dialCaller calls home and sends the handshake.
func dialCaller(ctx context.Context, info tcpStreamInfo, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", info.Address)
	if err != nil {
		return nil, err
	}
	setTCPOptions(conn)
	hs, _ := json.Marshal(handshake{Subject: info.Subject, StreamType: streamTypeResponse})
	_ = conn.SetWriteDeadline(time.Now().Add(timeout))
	if err := codec.WriteMessage(conn, codec.Message{Header: hs}); err != nil {
		conn.Close()
		return nil, err
	}
	_ = conn.SetWriteDeadline(time.Time{})
	return conn, nil
}

// connOut is a response stream on a call-home connection of its own (the
// classic protocol). A goroutine reads the caller's control frames.
type connOut struct {
	conn       net.Conn
	rc         *Context
	hard       <-chan struct{} // the endpoint's kill switch
	buf        []byte
	finished   chan struct{} // the handler returned
	readerDone chan struct{}
}

// openConn calls home for one request and starts reading control frames.
func openConn(rc *Context, info tcpStreamInfo, timeout time.Duration, hard <-chan struct{}) (*connOut, error) {
	conn, err := dialCaller(rc, info, timeout)
	if err != nil {
		return nil, err
	}
	o := &connOut{conn: conn, rc: rc, hard: hard, finished: make(chan struct{}), readerDone: make(chan struct{})}
	go func() {
		defer close(o.readerDone)
		o.readControl()
	}()
	return o, nil
}

// readControl applies the caller's control messages to rc until the
// connection ends. A connection that ends before the stream finished means
// the caller is gone: rc is killed.
func (o *connOut) readControl() {
	br := bufio.NewReader(o.conn)
	for {
		msg, err := codec.ReadMessage(br, maxControlHeader)
		if err != nil {
			select {
			case <-o.finished:
			default:
				o.rc.kill(ErrCallerGone)
			}
			return
		}
		ctrl, err := decodeControl(msg.Header)
		if err != nil {
			continue
		}
		switch ctrl {
		case "stop":
			o.rc.Stop()
		case "kill":
			o.rc.Kill()
		}
	}
}

func (o *connOut) write(ms ...codec.Message) (int, error) {
	o.buf = o.buf[:0]
	for _, m := range ms {
		o.buf = codec.AppendMessage(o.buf, m)
	}
	_, err := o.conn.Write(o.buf)
	return len(o.buf), err
}

func (o *connOut) handlerDone() { close(o.finished) }

func (o *connOut) close(bool) {
	if !o.rc.IsKilled() {
		// Give the caller a moment to close its end cleanly.
		select {
		case <-o.readerDone:
		case <-time.After(postSentinelWait):
		case <-o.hard:
		}
	}
	o.conn.Close()
	<-o.readerDone
}

func (r *responder) write(ms ...codec.Message) error {
	n, err := r.out.write(ms...)
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
			return r.write(r.prologue(AsError(herr))) == nil
		}
		frame, _ := errorFrame(AsError(herr))
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
