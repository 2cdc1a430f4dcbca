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
	"github.com/dynamo-go/dynamo/pkg/runtime/internal/natsplane"
	"github.com/dynamo-go/dynamo/pkg/runtime/internal/plane"
	"github.com/dynamo-go/dynamo/pkg/runtime/internal/tcpplane"
	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

// call sends payload to inst and streams its response items to emit. It
// returns nil after the worker's complete_final marker, the typed error of
// an error item or a failed start, a Disconnected error when the stream
// ends early, or the context's cause when rc is killed. If emit returns an
// error the worker is told to kill the request and call returns that error.
func (rt *DistributedRuntime) call(ctx context.Context, inst Instance, payload []byte, emit func([]byte) error) error {
	rc, ok := FromContext(ctx)
	if !ok {
		return NewError(TypeInvalidArgument, "runtime: the call's context carries no request Context")
	}
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

	si := tcpStreamInfo{Address: streams.advertise, Subject: p.subject, Context: rc.ID(), StreamType: streamTypeResponse}
	if !rt.cfg.DisableResponseMux {
		si.Mux = &muxInfo{Version: muxVersion, ServerID: streams.serverID, StreamID: p.id}
	}
	info, err := json.Marshal(si)
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
	headers := map[string]string{"x-request-id": rc.ID()}
	telemetry.Inject(ctx, headers)
	if err := rt.plane.send(rc, inst.Transport, headers, msg); err != nil {
		if rc.IsKilled() || rc.Err() != nil {
			// The caller gave up (a kill, or its context ended: a
			// batch whose sibling failed, say): not the instance's fault.
			return context.Cause(rc)
		}
		return sendError(inst, err)
	}

	var st responseStream
	timer := time.NewTimer(rt.cfg.CallHomeTimeout)
	defer timer.Stop()
	select {
	case st = <-p.ready:
	case <-p.gone.Done():
		return NewError(TypeDisconnected, MsgNotEstablished)
	case <-rc.Done():
		return context.Cause(rc)
	case <-timer.C:
		return NewError(TypeConnectionTimeout, "instance %x of %s did not call home within %s", inst.ID, inst.Endpoint, rt.cfg.CallHomeTimeout)
	}
	return readStream(rc, st, emit)
}

// responseStream is the caller's end of one established response stream:
// a call-home connection of its own (connStream) or a stream on a shared
// connection (muxStream).
type responseStream interface {
	// next returns the stream's next frame. Once the instance has left
	// discovery it fails with errOrphaned after a silence of the orphan
	// timeout; once rc is killed it fails promptly.
	next(rc *Context) (codec.Message, error)
	// ready reports whether next would return a frame without waiting
	// for the network (see Context.OnStreamIdle).
	ready() bool
	// control sends a control frame ("stop", "kill") to the worker.
	control(ctrl []byte)
	// abort makes a pending next return, after a kill.
	abort()
	// close ends the caller's side. ended tells that the worker ended the
	// stream itself (complete_final, an error prologue, a reset); if not,
	// the worker is told to abandon it.
	close(ended bool)
}

// errStreamReset is next's error after the worker abandoned a stream on
// a shared connection ("reset"): the counterpart of a classic connection's
// clean end.
var errStreamReset = errors.New("runtime: stream reset by the worker")

// errOrphaned is next's error for a stream that stayed silent for timeout
// after its worker left discovery.
type errOrphaned struct{ timeout time.Duration }

func (e errOrphaned) Error() string {
	return fmt.Sprintf("runtime: the worker left discovery and its stream was silent for %s", e.timeout)
}

// readStream consumes an established response stream. Once the caller
// stops or kills rc, a goroutine owned by this call forwards that to the
// worker; a stream that is never stopped costs no goroutine.
func readStream(rc *Context, st responseStream, emit func([]byte) error) error {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	unwatch := context.AfterFunc(rc.stopCtx, func() {
		defer wg.Done()
		forward(rc, st, done)
	})
	ended := false // the worker ended the stream
	idle := streamIdle(rc)
	defer func() {
		close(done)
		if unwatch() {
			wg.Done() // forward never started
		}
		st.close(ended)
		wg.Wait()
		idle()
	}()

	first, err := st.next(rc)
	if err != nil {
		ended = errors.Is(err, errStreamReset)
		return endedEarly(rc, err)
	}
	var pro prologue
	if err := json.Unmarshal(first.Header, &pro); err != nil {
		return NewError(TypeUnknown, "runtime: bad response prologue: %v", err)
	}
	if pro.Error != nil {
		ended = true
		if pro.ErrorDetail != nil {
			return pro.ErrorDetail
		}
		return &Error{Type: TypeUnknown, Message: *pro.Error}
	}

	var firstErr error
	for {
		if !st.ready() {
			idle() // everything received so far is delivered
		}
		msg, err := st.next(rc)
		if err != nil {
			ended = errors.Is(err, errStreamReset)
			if rc.IsStopped() && !rc.IsKilled() {
				return firstErr
			}
			return endedEarly(rc, err)
		}
		if len(msg.Data) == 0 {
			continue // a control frame ("sentinel") before complete_final: ignore
		}
		if item, ok := plainItem(msg.Data); ok {
			if err := emit(item); err != nil {
				st.control(ctrlKill)
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
			ended = true
			return firstErr
		case w.Data == nil:
			firstErr = cmpErr(firstErr, NewError(TypeUnknown, "runtime: response item with neither data nor complete_final"))
		case w.Data.Error != nil:
			firstErr = cmpErr(firstErr, w.Data.Error)
		case w.Data.Event == "error":
			firstErr = cmpErr(firstErr, NewError(TypeUnknown, "%s", strings.Join(w.Data.Comment, "; ")))
		case len(w.Data.Data) > 0:
			if err := emit(w.Data.Data); err != nil {
				st.control(ctrlKill)
				return err
			}
		}
	}
}

// forward runs once rc is stopped or killed: it sends "stop" (unless rc
// is killed already), then "kill" when rc is killed, and aborts the
// stream, which ends the reader.
func forward(rc *Context, st responseStream, done <-chan struct{}) {
	if !rc.IsKilled() {
		st.control(ctrlStop)
	}
	select {
	case <-rc.Killed():
		st.control(ctrlKill)
		st.abort()
	case <-done:
	}
}

// sendError classifies a request-plane failure. A worker that refused the
// request says why in its ack ("Backend.EngineShutdown: ...",
// "ResourceExhausted: ..."), and that type is kept: a draining worker is an
// instance fault, a busy one is not. A worker that is alive but did not
// ack in time (a TCP ack timeout on a live connection, a NATS request
// that reached a subscriber and timed out) is busy too: ErrAckTimeout, a
// WorkerOverloaded error. Everything else means the request did not get
// through (a refused, broken or dead connection, no responders):
// CannotConnect.
func sendError(inst Instance, err error) error {
	var ack *plane.AckError
	if errors.As(err, &ack) {
		if e := parseErrorText(ack.Text); e != nil {
			e.Message = fmt.Sprintf("instance %x of %s: %s", inst.ID, inst.Endpoint, e.Message)
			return e
		}
	}
	if slowAck(err) {
		return fmt.Errorf("%w: %w", ErrAckTimeout, &Error{Type: TypeWorkerOverloaded,
			Message: fmt.Sprintf("instance %x of %s is alive but did not accept the request in time: %v", inst.ID, inst.Endpoint, err)})
	}
	return &Error{Type: TypeCannotConnect, Message: fmt.Sprintf("instance %x of %s: %v", inst.ID, inst.Endpoint, err)}
}

// slowAck reports a request plane's ack timeout from an instance that is
// alive: on TCP one that did not fail the connection (tcpplane tells a
// slow peer from a gone one), on NATS a timeout (a request nobody
// subscribes to fails at once with no responders instead).
func slowAck(err error) bool {
	return (errors.Is(err, tcpplane.ErrAckTimeout) && !errors.Is(err, tcpplane.ErrConnLost)) ||
		errors.Is(err, natsplane.ErrTimeout)
}

func cmpErr(first, next error) error {
	if first != nil {
		return first
	}
	return next
}

// endedEarly maps a read failure before complete_final: the caller's own
// kill, a silent orphan, or a worker that went away.
func endedEarly(rc *Context, err error) error {
	if rc.IsKilled() {
		return context.Cause(rc)
	}
	var orphan errOrphaned
	if errors.As(err, &orphan) {
		return NewError(TypeDisconnected, "%s: the worker left discovery and its stream was silent for %s", MsgStreamEnded, orphan.timeout)
	}
	e := NewError(TypeDisconnected, MsgStreamEnded)
	if err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, errStreamReset) && err.Error() != "EOF" {
		e.Cause = &Error{Type: TypeUnknown, Message: err.Error()}
	}
	return e
}

// connStream is a response stream on a call-home connection of its own
// (the classic protocol).
type connStream struct {
	conn    net.Conn
	r       *bufio.Reader
	maxSize int
	orphan  *orphanWatch
	unwatch func()

	mu sync.Mutex // serializes control frames
}

func newConnStream(conn net.Conn, maxSize int, p *pendingStream, orphanTimeout time.Duration) *connStream {
	c := &connStream{conn: conn, r: bufio.NewReader(conn), maxSize: maxSize}
	c.orphan = &orphanWatch{conn: conn, gone: p.gone, timeout: orphanTimeout}
	c.unwatch = c.orphan.watch()
	return c
}

func (c *connStream) next(*Context) (codec.Message, error) {
	m, err := codec.ReadMessage(c.r, c.maxSize)
	if err != nil {
		return m, c.orphan.silent(err)
	}
	c.orphan.heard()
	return m, nil
}

func (c *connStream) ready() bool { return codec.FrameBuffered(c.r) }

func (c *connStream) control(ctrl []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.conn.SetWriteDeadline(time.Now().Add(time.Second))
	_ = codec.WriteMessage(c.conn, codec.Message{Header: ctrl})
}

// abort closes the connection, which ends a pending read.
func (c *connStream) abort() { c.conn.Close() }

func (c *connStream) close(bool) {
	c.unwatch()
	c.conn.Close()
}
