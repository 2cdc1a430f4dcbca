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

// responder is the worker's end of one response stream.
type responder struct {
	conn    net.Conn
	rc      *Context
	metrics *endpointMetrics
	maxSize int // largest frame the caller accepts

	mu        sync.Mutex
	started   bool // the prologue was sent
	buf       []byte
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

// readControl applies the caller's control messages to rc until the
// connection ends. A connection that ends before the stream finished means
// the caller is gone: rc is killed.
func (r *responder) readControl(finished <-chan struct{}) {
	br := bufio.NewReader(r.conn)
	for {
		msg, err := codec.ReadMessage(br, maxControlHeader)
		if err != nil {
			select {
			case <-finished:
			default:
				r.rc.kill(ErrCallerGone)
			}
			return
		}
		ctrl, err := decodeControl(msg.Header)
		if err != nil {
			continue
		}
		switch ctrl {
		case "stop":
			r.rc.Stop()
		case "kill":
			r.rc.Kill()
		}
	}
}

func (r *responder) write(m codec.Message) error {
	r.buf = codec.AppendMessage(r.buf[:0], m)
	if _, err := r.conn.Write(r.buf); err != nil {
		r.rc.kill(ErrCallerGone)
		return fmt.Errorf("runtime: response stream: %w", err)
	}
	r.metrics.responseBytes.Add(float64(len(r.buf)))
	return nil
}

func (r *responder) prologue(e *Error) error {
	p := prologue{}
	if e != nil {
		text := e.Error()
		p.Error, p.ErrorDetail = &text, e
	}
	hdr, _ := json.Marshal(p)
	r.started = true
	return r.write(codec.Message{Header: hdr})
}

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
	if !r.started {
		if err := r.prologue(nil); err != nil {
			return err
		}
	}
	data := appendDataFrame(make([]byte, 0, len(item)+48), item)
	if len(data)+24 > r.maxSize {
		return NewError(TypeInvalidArgument, "runtime: response item of %d bytes exceeds the %d-byte frame limit", len(item), r.maxSize)
	}
	if err := r.write(codec.Message{Data: data}); err != nil {
		r.metrics.errors.WithLabelValues("publish_response").Inc()
		return err
	}
	if r.firstSent.IsZero() {
		r.firstSent = time.Now()
		r.metrics.firstResponse.Observe(r.firstSent.Sub(r.received).Seconds())
	}
	return nil
}

// finish ends the stream after the handler returned herr.
func (r *responder) finish(herr error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rc.IsKilled() {
		return // the caller is gone or asked to abandon: no final frames
	}
	if herr != nil {
		if !r.started {
			r.metrics.errors.WithLabelValues("generate").Inc()
			_ = r.prologue(AsError(herr))
			return
		}
		frame, _ := errorFrame(AsError(herr))
		if r.write(codec.Message{Data: frame}) != nil {
			return
		}
	} else if !r.started {
		if r.prologue(nil) != nil {
			return
		}
	}
	if err := r.write(codec.Message{Data: completeFinalFrame}); err != nil {
		r.metrics.errors.WithLabelValues("publish_final").Inc()
		return
	}
	_ = r.write(codec.Message{Header: ctrlSentinel})
}
