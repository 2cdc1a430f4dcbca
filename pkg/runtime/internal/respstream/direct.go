package respstream

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/codec"
)

// postSentinelWait bounds how long a worker waits for the caller to close
// the connection after the final frames.
const postSentinelWait = 10 * time.Second

// dialCaller calls home and sends the handshake.
func dialCaller(ctx context.Context, t Target, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", t.Address)
	if err != nil {
		return nil, err
	}
	setTCPOptions(conn)
	hs, _ := json.Marshal(handshake{Subject: t.Subject, StreamType: StreamTypeResponse})
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
	rc         Request
	hard       <-chan struct{} // the endpoint's kill switch
	buf        []byte
	finished   chan struct{} // the handler returned
	readerDone chan struct{}
}

// Dial calls the caller home for one request on a connection of its own
// (the classic protocol), within timeout, and starts the goroutine that
// reads the caller's control frames; Close ends it. After the final
// frames Close waits for the caller to close its end, up to 10 s or until
// hard is closed.
func Dial(rc Request, t Target, timeout time.Duration, hard <-chan struct{}) (Out, error) {
	conn, err := dialCaller(rc, t, timeout)
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
				o.rc.CallerGone()
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

func (o *connOut) Write(ms ...codec.Message) (int, error) {
	o.buf = o.buf[:0]
	for _, m := range ms {
		o.buf = codec.AppendMessage(o.buf, m)
	}
	_, err := o.conn.Write(o.buf)
	return len(o.buf), err
}

func (o *connOut) HandlerDone() { close(o.finished) }

func (o *connOut) Close(bool) {
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
