package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/codec"
)

// Errors of a serving endpoint, sent to callers in the request-plane ack.
var (
	// ErrDraining: the endpoint is shutting down and takes no new requests.
	ErrDraining = NewError(TypeEngineShutdown, "endpoint is shutting down")
	// ErrBusy: the endpoint's handler pool is full.
	ErrBusy = NewError(TypeResourceExhausted, "worker queue is full")
)

// Serve registers this process as an instance of the endpoint and serves
// requests with h until ctx ends, the runtime shuts down, or the discovery
// lease is lost. The order is the reference system's: the request plane
// accepts first, then the instance record is written (so nobody sees an
// instance that cannot take requests yet); at the end the record is removed
// first, requests are still taken for Config.GracePeriod (routers that have
// not seen the removal yet), then new requests are refused and in-flight
// ones drain for up to Config.DrainTimeout, after which they are killed.
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
	record, _ := json.Marshal(inst)
	key := InstanceKey(e.id, inst.ID)
	if err := rt.store.Create(ctx, key, record); err != nil {
		rt.plane.stopServing(transport)
		return fmt.Errorf("runtime: register %s: %w", e.id.Path(), err)
	}
	rt.health.setEndpoint(e.id.Name, true)
	rt.log.Info("runtime: serving endpoint", "endpoint", e.id.String(), "instance_id", fmt.Sprintf("%x", inst.ID), "transport", transport)

	var result error
	select {
	case <-ctx.Done():
	case <-rt.shutdown:
	case <-rt.store.Done():
		result = rt.store.Err()
	}

	// Ordered shutdown: unregister, grace period, refuse, drain, kill what
	// is left.
	rt.health.setEndpoint(e.id.Name, false)
	delCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	if err := rt.store.Delete(delCtx, key); err != nil && result == nil {
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

// servedEndpoint is one endpoint served by this process.
type servedEndpoint struct {
	rt      *DistributedRuntime
	id      EndpointID
	h       Handler
	metrics *endpointMetrics

	hardCtx    context.Context
	hardCancel context.CancelCauseFunc

	mu       sync.Mutex
	draining bool
	inflight int
	idle     chan struct{} // closed when inflight drops to 0 while draining
	wg       sync.WaitGroup
}

// onRequest is the request-plane handler: validate, admit, start the
// request in its own goroutine, and return at once (the ack).
func (s *servedEndpoint) onRequest(_ map[string]string, envelope []byte) error {
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
	if err := json.Unmarshal(msg.Header, &ctl); err != nil {
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
	if ctl.ConnectionInfo.Transport != transportTCPServer || json.Unmarshal([]byte(ctl.ConnectionInfo.Info), &info) != nil {
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
	go s.handle(ctl.ID, info, msg.Data, received)
	return nil
}

// handle runs one request: call home, run the handler, finish the stream.
func (s *servedEndpoint) handle(id string, info tcpStreamInfo, payload []byte, received time.Time) {
	defer s.done(received)
	rc := NewContext(s.hardCtx, id)
	defer rc.Release()
	conn, err := dialCaller(rc, info, s.rt.cfg.TCPConnectTimeout)
	if err != nil {
		s.metrics.errors.WithLabelValues("response_stream").Inc()
		s.rt.log.Warn("runtime: cannot call home", "request_id", id, "address", info.Address, "err", err)
		return
	}
	r := &responder{conn: conn, rc: rc, metrics: s.metrics, maxSize: s.rt.cfg.MaxMessageSize, received: received}
	finished := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		r.readControl(finished)
	}()

	herr := s.h.Handle(rc, payload, r.emit)
	close(finished)
	r.finish(herr)
	if !rc.IsKilled() {
		// Give the caller a moment to close its end cleanly.
		select {
		case <-readerDone:
		case <-time.After(postSentinelWait):
		case <-s.hardCtx.Done():
		}
	}
	conn.Close()
	<-readerDone
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
