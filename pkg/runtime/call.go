package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/codec"
	"github.com/dynamo-go/dynamo/pkg/runtime/internal/natsplane"
	"github.com/dynamo-go/dynamo/pkg/runtime/internal/plane"
	"github.com/dynamo-go/dynamo/pkg/runtime/internal/respstream"
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
	p, err := streams.Register(streamInstance(inst.EndpointID(), inst.ID))
	if errors.Is(err, respstream.ErrInstanceLeft) {
		return NewError(TypeDisconnected, "instance %x of %s left discovery", inst.ID, inst.EndpointID().Path())
	}
	if err != nil {
		return err
	}
	defer streams.Release(p)

	si := tcpStreamInfo{Address: streams.Advertise(), Subject: p.Subject(), Context: rc.ID(), StreamType: respstream.StreamTypeResponse}
	if !rt.cfg.DisableResponseMux {
		si.Mux = &muxInfo{Version: muxVersion, ServerID: streams.ID(), StreamID: p.StreamID()}
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

	var st respstream.Stream
	timer := time.NewTimer(rt.cfg.CallHomeTimeout)
	defer timer.Stop()
	select {
	case st = <-p.Opened():
	case <-p.Gone():
		return NewError(TypeDisconnected, MsgNotEstablished)
	case <-rc.Done():
		return context.Cause(rc)
	case <-timer.C:
		return NewError(TypeConnectionTimeout, "instance %x of %s did not call home within %s", inst.ID, inst.Endpoint, rt.cfg.CallHomeTimeout)
	}
	return readStream(rc, st, emit)
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
