package runtime

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/codec"
	"github.com/dynamo-go/dynamo/pkg/runtime/internal/plane"
)

// call sends payload to inst and streams its response items to emit. It
// returns nil after the worker's complete_final marker, the typed error of
// an error item or a failed start, a Disconnected error when the stream
// ends early, or the context's cause when rc is killed. If emit returns an
// error the worker is told to kill the request and call returns that error.
func (rt *DistributedRuntime) call(rc *Context, inst Instance, payload []byte, emit func([]byte) error) error {
	if len(payload) == 0 {
		return NewError(TypeInvalidArgument, "runtime: empty request payload")
	}
	if rc.IsKilled() {
		return context.Cause(rc)
	}
	streams, err := rt.streamServer()
	if err != nil {
		return err
	}
	p, err := streams.register(instanceRef{inst.EndpointID(), inst.ID})
	if err != nil {
		return err
	}
	defer streams.release(p)

	info, err := json.Marshal(tcpStreamInfo{Address: streams.advertise, Subject: p.subject, Context: rc.ID(), StreamType: streamTypeResponse})
	if err != nil {
		return err
	}
	hdr, err := json.Marshal(requestControl{
		ID:              rc.ID(),
		RequestType:     "single_in",
		ResponseType:    "many_out",
		PayloadCodec:    codecJSON,
		ConnectionInfo:  connectionInfo{Transport: transportTCPServer, Info: string(info)},
		FrontendSendTsN: time.Now().UnixNano(),
	})
	if err != nil {
		return err
	}
	msg := codec.AppendMessage(nil, codec.Message{Header: hdr, Data: payload})
	if err := rt.plane.send(rc, inst.Transport, map[string]string{"x-request-id": rc.ID()}, msg); err != nil {
		if rc.IsKilled() {
			return context.Cause(rc)
		}
		return sendError(inst, err)
	}

	var conn net.Conn
	timer := time.NewTimer(rt.cfg.CallHomeTimeout)
	defer timer.Stop()
	select {
	case conn = <-p.ready:
	case <-p.gone.Done():
		return NewError(TypeDisconnected, MsgNotEstablished)
	case <-rc.Done():
		return context.Cause(rc)
	case <-timer.C:
		return NewError(TypeConnectionTimeout, "instance %x of %s did not call home within %s", inst.ID, inst.Endpoint, rt.cfg.CallHomeTimeout)
	}
	orphan := &orphanWatch{conn: conn, gone: p.gone, timeout: rt.cfg.OrphanedStreamTimeout}
	return readStream(rc, conn, rt.cfg.MaxMessageSize, orphan, emit)
}

// readStream consumes an established response stream. A goroutine owned by
// this call forwards the caller's stop and kill to the worker, and, once
// the worker has left discovery, lets the stream stay silent only for the
// orphan timeout.
func readStream(rc *Context, conn net.Conn, maxSize int, orphan *orphanWatch, emit func([]byte) error) error {
	ctl := &controlWriter{conn: conn}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ctl.forward(rc, done)
	}()
	stopWatch := orphan.watch()
	idle := streamIdle(rc)
	defer func() {
		stopWatch()
		close(done)
		conn.Close()
		wg.Wait()
		idle()
	}()

	r := bufio.NewReader(conn)
	first, err := codec.ReadMessage(r, maxSize)
	if err != nil {
		return orphan.endedEarly(rc, err)
	}
	orphan.heard()
	var pro prologue
	if err := json.Unmarshal(first.Header, &pro); err != nil {
		return NewError(TypeUnknown, "runtime: bad response prologue: %v", err)
	}
	if pro.Error != nil {
		if pro.ErrorDetail != nil {
			return pro.ErrorDetail
		}
		return &Error{Type: TypeUnknown, Message: *pro.Error}
	}

	var firstErr error
	for {
		if !codec.FrameBuffered(r) {
			idle() // everything received so far is delivered
		}
		msg, err := codec.ReadMessage(r, maxSize)
		if err != nil {
			if rc.IsStopped() && !rc.IsKilled() {
				return firstErr
			}
			return orphan.endedEarly(rc, err)
		}
		orphan.heard()
		if len(msg.Data) == 0 {
			continue // a control frame ("sentinel") before complete_final: ignore
		}
		if item, ok := plainItem(msg.Data); ok {
			if err := emit(item); err != nil {
				ctl.send(ctrlKill)
				return err
			}
			continue
		}
		var w streamWrapper
		if err := json.Unmarshal(msg.Data, &w); err != nil {
			firstErr = cmpErr(firstErr, NewError(TypeUnknown, "runtime: undecodable response item: %v", err))
			continue
		}
		switch {
		case w.CompleteFinal:
			return firstErr
		case w.Data == nil:
			firstErr = cmpErr(firstErr, NewError(TypeUnknown, "runtime: response item with neither data nor complete_final"))
		case w.Data.Error != nil:
			firstErr = cmpErr(firstErr, w.Data.Error)
		case w.Data.Event == "error":
			firstErr = cmpErr(firstErr, NewError(TypeUnknown, "%s", strings.Join(w.Data.Comment, "; ")))
		case len(w.Data.Data) > 0:
			if err := emit(w.Data.Data); err != nil {
				ctl.send(ctrlKill)
				return err
			}
		}
	}
}

// sendError classifies a request-plane failure. A worker that refused the
// request says why in its ack ("Backend.EngineShutdown: ...",
// "ResourceExhausted: ..."), and that type is kept: a draining worker is an
// instance fault, a busy one is not. Everything else means the request did
// not get through: CannotConnect.
func sendError(inst Instance, err error) error {
	var ack *plane.AckError
	if errors.As(err, &ack) {
		if e := parseErrorText(ack.Text); e != nil {
			e.Message = fmt.Sprintf("instance %x of %s: %s", inst.ID, inst.Endpoint, e.Message)
			return e
		}
	}
	return &Error{Type: TypeCannotConnect, Message: fmt.Sprintf("instance %x of %s: %v", inst.ID, inst.Endpoint, err)}
}

func cmpErr(first, next error) error {
	if first != nil {
		return first
	}
	return next
}

// endedEarly maps a read failure before complete_final: the caller's own
// kill, or a worker that went away.
func endedEarly(rc *Context, err error) error {
	if rc.IsKilled() {
		return context.Cause(rc)
	}
	e := NewError(TypeDisconnected, MsgStreamEnded)
	if !errors.Is(err, net.ErrClosed) && err != nil && err.Error() != "EOF" {
		e.Cause = &Error{Type: TypeUnknown, Message: err.Error()}
	}
	return e
}

// controlWriter writes control frames to the worker.
type controlWriter struct {
	mu   sync.Mutex
	conn net.Conn
}

func (c *controlWriter) send(ctrl []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.conn.SetWriteDeadline(time.Now().Add(time.Second))
	_ = codec.WriteMessage(c.conn, codec.Message{Header: ctrl})
}

// forward sends "stop" when rc is stopped and "kill" (then closes the
// connection, which ends the reader) when rc is killed.
func (c *controlWriter) forward(rc *Context, done <-chan struct{}) {
	select {
	case <-rc.Stopped():
	case <-done:
		return
	}
	if !rc.IsKilled() {
		c.send(ctrlStop)
	}
	select {
	case <-rc.Killed():
		c.send(ctrlKill)
		c.conn.Close()
	case <-done:
	}
}
