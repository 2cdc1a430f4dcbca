package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/codec"
	"github.com/dynamo-go/dynamo/pkg/runtime/internal/respstream"
	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

// Errors of a serving endpoint, sent to callers in the request-plane ack.
var (
	// ErrDraining: the endpoint is shutting down and takes no new requests.
	ErrDraining = NewError(TypeEngineShutdown, "endpoint is shutting down")
	// ErrBusy: the endpoint's handler pool is full.
	ErrBusy = NewError(TypeResourceExhausted, "worker queue is full")
)

// ErrNotServing is returned by Endpoint.SetHealthy for an endpoint this
// process does not serve, or no longer serves.
var ErrNotServing = errors.New("runtime: endpoint not served by this process")

// Serve registers this process as an instance of the endpoint and serves
// requests with h until ctx ends, the runtime shuts down, or the discovery
// lease is lost. The order is the reference system's: the request plane
// accepts first, then the instance record is written (so nobody sees an
// instance that cannot take requests yet); at the end the record is removed
// first, requests are still taken for Config.GracePeriod (routers that have
// not seen the removal yet), then new requests are refused and in-flight
// ones drain for up to Config.DrainTimeout, after which they are killed.
// Meanwhile SetHealthy can take the instance out of discovery and put it
// back (a worker's health checks do).
//
// Serve returns nil after a clean shutdown, discovery.ErrLeaseLost if the
// lease was lost, or the error that kept it from starting.
func (e *Endpoint) Serve(ctx context.Context, h Handler) error {
	rt := e.rt
	if err := e.id.Validate(); err != nil {
		return err
	}
	if !rt.tracker.add() {
		return ErrRuntimeClosed
	}
	defer rt.tracker.done()

	s := &servedEndpoint{rt: rt, id: e.id, h: h, metrics: rt.metrics.endpoint(e.id)}
	s.hardCtx, s.hardCancel = context.WithCancelCause(context.Background())
	defer s.hardCancel(nil)

	transport, err := rt.plane.serve(ctx, e.id, rt.InstanceID(), s.onRequest)
	if err != nil {
		return err
	}
	inst := Instance{Namespace: e.id.Namespace, Component: e.id.Component, Endpoint: e.id.Name, ID: rt.InstanceID(), Transport: transport}
	s.record, _ = json.Marshal(inst)
	s.key = InstanceKey(e.id, inst.ID)
	// Served (for SetHealthy) before it is discoverable: a caller may
	// find the instance and be answered before the next line runs. A
	// SetHealthy meanwhile waits for the registration, then applies.
	s.regMu.Lock()
	rt.health.addServed(s)
	if err := rt.store.Create(ctx, s.key, s.record); err != nil {
		s.regMu.Unlock()
		rt.health.removeServed(s)
		rt.plane.stopServing(transport)
		return WithAuthAdvice(fmt.Errorf("runtime: register %s: %w", e.id.Path(), err))
	}
	s.registered = true
	rt.health.setEndpoint(e.id.Name, true)
	s.regMu.Unlock()
	rt.log.Info("runtime: serving endpoint", "endpoint", e.id.String(), "instance_id", fmt.Sprintf("%x", inst.ID), "transport", transport)

	var result error
	select {
	case <-ctx.Done():
	case <-rt.shutdown:
	case <-rt.store.Done():
		result = rt.store.Err()
	}

	// Ordered shutdown: unregister, grace period, refuse, drain, kill what
	// is left. From here on SetHealthy cannot register the instance again.
	rt.health.removeServed(s)
	s.regMu.Lock()
	s.stopping = true
	s.regMu.Unlock()
	rt.health.setEndpoint(e.id.Name, false)
	delCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	if err := rt.store.Delete(delCtx, s.key); err != nil && result == nil {
		rt.log.Warn("runtime: unregister failed; the instance expires with the lease", "endpoint", e.id.String(), "err", err)
	}
	cancel()
	if rt.cfg.GracePeriod > 0 && result == nil {
		select {
		case <-time.After(rt.cfg.GracePeriod):
		case <-rt.store.Done():
		}
	}
	s.stopAdmitting()
	rt.plane.stopServing(transport)
	if !s.drain(rt.cfg.DrainTimeout) {
		rt.log.Warn("runtime: drain timed out; killing in-flight requests", "endpoint", e.id.String(), "timeout", rt.cfg.DrainTimeout)
		s.hardCancel(ErrEngineShutdown)
		s.drain(5 * time.Second)
	}
	rt.log.Info("runtime: endpoint stopped", "endpoint", e.id.String())
	return result
}

// SetHealthy takes the endpoint this process serves out of routing
// (healthy false) or puts it back (true). Unhealthy, its instance record
// is deleted from discovery, so callers' clients stop listing it (and
// routers stop picking it), and the status server reports the endpoint
// notready; the request plane keeps serving meanwhile: in-flight requests
// finish, and a caller that has not yet seen the removal is still served.
// Healthy again, the record is written back and the endpoint reports
// ready. Calls that ask for the state the endpoint is in change nothing.
//
// It returns ErrNotServing when Serve is not serving the endpoint (not
// yet, or shutting down: a shutdown is never undone), and the discovery
// store's error if the record could not be deleted or written; the
// status server then reports the endpoint notready, and a later call
// may try again.
func (e *Endpoint) SetHealthy(ctx context.Context, healthy bool) error {
	s := e.rt.health.lookupServed(e.id)
	if s == nil {
		return fmt.Errorf("%w: %s", ErrNotServing, e.id.Path())
	}
	return s.setHealthy(ctx, healthy)
}

func (s *servedEndpoint) setHealthy(ctx context.Context, healthy bool) error {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	if s.stopping {
		return fmt.Errorf("%w: %s", ErrNotServing, s.id.Path())
	}
	if !healthy {
		s.rt.health.setEndpoint(s.id.Name, false)
		if s.registered {
			if err := s.rt.store.Delete(ctx, s.key); err != nil {
				return fmt.Errorf("runtime: withdraw %s: %w", s.id.Path(), err)
			}
			s.registered = false
			s.rt.log.Debug("runtime: endpoint withdrawn from discovery", "endpoint", s.id.String())
		}
		return nil
	}
	if !s.registered {
		if err := s.rt.store.Create(ctx, s.key, s.record); err != nil {
			return WithAuthAdvice(fmt.Errorf("runtime: register %s: %w", s.id.Path(), err))
		}
		s.registered = true
		s.rt.log.Debug("runtime: endpoint registered again", "endpoint", s.id.String())
	}
	s.rt.health.setEndpoint(s.id.Name, true)
	return nil
}

// servedEndpoint is one endpoint served by this process.
type servedEndpoint struct {
	rt      *DistributedRuntime
	id      EndpointID
	h       Handler
	metrics *endpointMetrics

	hardCtx    context.Context
	hardCancel context.CancelCauseFunc

	// The instance record and whether it is in discovery (SetHealthy).
	key        string
	record     []byte
	regMu      sync.Mutex
	registered bool
	stopping   bool // Serve is shutting down: never register again

	mu       sync.Mutex
	draining bool
	inflight int
	idle     chan struct{} // closed when inflight drops to 0 while draining
	wg       sync.WaitGroup
}

// onRequest is the request-plane handler: validate, admit, start the
// request in its own goroutine, and return at once (the ack).
func (s *servedEndpoint) onRequest(headers map[string]string, envelope []byte) error {
	received := time.Now()
	msg, err := codec.Decode(envelope, s.rt.cfg.MaxMessageSize)
	if err != nil || len(msg.Header) == 0 || len(msg.Data) == 0 {
		s.metrics.errors.WithLabelValues("invalid_message").Inc()
		return NewError(TypeInvalidArgument, "invalid request envelope: want header and data parts")
	}
	var ctl requestControl
	var info tcpStreamInfo
	if len(msg.Header) > maxControlHeader {
		s.metrics.errors.WithLabelValues("invalid_message").Inc()
		return NewError(TypeInvalidArgument, "request control header of %d bytes exceeds %d", len(msg.Header), maxControlHeader)
	}
	if err := decodeRequestControl(msg.Header, &ctl); err != nil {
		s.metrics.errors.WithLabelValues("deserialization").Inc()
		return NewError(TypeInvalidArgument, "bad request control header: %v", err)
	}
	if ctl.RequestType != "" && ctl.RequestType != "single_in" {
		s.metrics.errors.WithLabelValues("invalid_message").Inc()
		return NewError(TypeInvalidArgument, "request_type %q is not supported (single_in only)", ctl.RequestType)
	}
	if ctl.PayloadCodec != "" && ctl.PayloadCodec != codecJSON {
		s.metrics.errors.WithLabelValues("deserialization").Inc()
		return NewError(TypeInvalidArgument, "payload codec %q is not supported (use json)", ctl.PayloadCodec)
	}
	if ctl.ConnectionInfo.Transport != transportTCPServer || decodeStreamInfo([]byte(ctl.ConnectionInfo.Info), &info) != nil {
		s.metrics.errors.WithLabelValues("deserialization").Inc()
		return NewError(TypeInvalidArgument, "bad connection info %q", ctl.ConnectionInfo.Transport)
	}

	s.mu.Lock()
	switch {
	case s.draining:
		s.mu.Unlock()
		return ErrDraining
	case s.inflight >= s.rt.cfg.WorkerPoolSize:
		s.mu.Unlock()
		return ErrBusy
	}
	s.inflight++
	s.wg.Add(1)
	s.mu.Unlock()

	s.metrics.requests.Inc()
	s.metrics.inflight.Inc()
	s.metrics.requestBytes.Add(float64(len(envelope)))
	if ctl.FrontendSendTsN > 0 {
		s.metrics.transit.Observe(max(0, received.Sub(time.Unix(0, ctl.FrontendSendTsN)).Seconds()))
	}
	go s.handle(ctl.ID, headers, info, msg.Data, received)
	return nil
}

// handle runs one request: call home, run the handler, finish the stream.
// Its span (a child of the caller's, from the headers' trace context)
// covers all of it; the handler's spans are its children.
func (s *servedEndpoint) handle(id string, headers map[string]string, info tcpStreamInfo, payload []byte, received time.Time) {
	defer s.done(received)
	ctx, span := s.rt.tracer.Start(telemetry.Extract(s.hardCtx, headers), "runtime.handle",
		trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(received),
		trace.WithAttributes(attribute.String("endpoint", s.id.String()), attribute.String("x_request_id", id)))
	defer span.End()
	rc := NewContext(ctx, id)
	defer rc.Release()
	out, err := s.openStream(rc, info)
	if err != nil {
		s.metrics.errors.WithLabelValues("response_stream").Inc()
		s.rt.log.WarnContext(rc, "runtime: cannot call home", "request_id", id, "address", info.Address, "err", err)
		span.SetStatus(codes.Error, "cannot open the response stream: "+err.Error())
		return
	}
	r := &responder{out: out, rc: rc, metrics: s.metrics, maxSize: s.rt.cfg.MaxMessageSize, received: received}
	herr := s.h.Handle(rc, payload, r.emit)
	out.HandlerDone()
	out.Close(r.finish(herr))
	if herr != nil {
		span.SetStatus(codes.Error, herr.Error())
	}
}

// openStream opens the request's response stream: on the shared
// connection to the caller when the caller offers one in a version this
// runtime speaks (and sharing is not disabled), else on a connection of
// its own.
func (s *servedEndpoint) openStream(rc *Context, info tcpStreamInfo) (respstream.Out, error) {
	t := respstream.Target{Address: info.Address, Subject: info.Subject}
	if m := info.Mux; m != nil && m.Version == muxVersion && m.StreamID != 0 && m.ServerID != "" && !s.rt.cfg.DisableResponseMux {
		t.ServerID, t.StreamID = m.ServerID, m.StreamID
		out, err := s.rt.mux.Open(streamRequest{rc}, t)
		if errors.Is(err, respstream.ErrClosed) {
			err = ErrRuntimeClosed
		}
		return out, err
	}
	return respstream.Dial(streamRequest{rc}, t, s.rt.cfg.TCPConnectTimeout, s.hardCtx.Done())
}

func (s *servedEndpoint) done(received time.Time) {
	s.metrics.inflight.Dec()
	s.metrics.duration.Observe(time.Since(received).Seconds())
	s.mu.Lock()
	s.inflight--
	if s.inflight == 0 && s.idle != nil {
		close(s.idle)
		s.idle = nil
	}
	s.mu.Unlock()
	s.wg.Done()
}

func (s *servedEndpoint) stopAdmitting() {
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
}

// drain waits up to timeout for in-flight requests to finish.
func (s *servedEndpoint) drain(timeout time.Duration) bool {
	s.mu.Lock()
	if s.inflight == 0 {
		s.mu.Unlock()
		return true
	}
	if s.idle == nil {
		s.idle = make(chan struct{})
	}
	idle := s.idle
	s.mu.Unlock()
	select {
	case <-idle:
		s.wg.Wait()
		return true
	case <-time.After(timeout):
		return false
	}
}
