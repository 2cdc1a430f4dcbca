package natsplane

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/plane"
)

// Errors returned by Server.
var (
	// ErrClosed reports use of a closed Server.
	ErrClosed = errors.New("natsplane: server closed")
	// ErrAlreadyRegistered reports a second Register for one subject.
	ErrAlreadyRegistered = errors.New("natsplane: subject already registered")
	// ErrNotRegistered reports Unregister of an unknown subject.
	ErrNotRegistered = errors.New("natsplane: subject not registered")
)

// ackUnknownEndpoint is the reply to a request that arrives while its
// subject is being unregistered, matching the TCP plane's text.
const ackUnknownEndpoint = "Unknown endpoint: "

// Server is the worker side of the NATS request plane.
type Server struct {
	nc  *nats.Conn
	log *slog.Logger

	mu     sync.Mutex
	subs   map[string]*subscription
	closed bool
}

// subscription pairs a NATS subscription with its handler. mu is held
// while the handler runs, so Unregister can wait for a running call.
type subscription struct {
	sub     *nats.Subscription
	mu      sync.Mutex
	h       plane.Handler // nil once unregistered
	subject string
	log     *slog.Logger
}

// NewServer returns a Server that subscribes on nc. logger may be nil.
func NewServer(nc *nats.Conn, logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Server{nc: nc, log: logger, subs: make(map[string]*subscription)}
}

// flushTimeout bounds the round trip Register and Unregister make so that
// the NATS server has seen the (un)subscription when they return.
const flushTimeout = 2 * time.Second

// Register subscribes to subject and calls h for every message on it. When
// the connection is up, Register returns after the NATS server has
// processed the subscription, so requests sent afterwards find it; while
// the connection is reconnecting, nats.go subscribes once it is back.
func (s *Server) Register(subject string, h plane.Handler) error {
	if h == nil {
		return errors.New("natsplane: nil handler")
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if _, ok := s.subs[subject]; ok {
		s.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrAlreadyRegistered, subject)
	}
	e := &subscription{h: h, subject: subject, log: s.log}
	sub, err := s.nc.Subscribe(subject, e.handle)
	if err != nil {
		s.mu.Unlock()
		return fmt.Errorf("natsplane: subscribe %s: %w", subject, err)
	}
	e.sub = sub
	s.subs[subject] = e
	s.mu.Unlock()
	s.flush()
	return nil
}

// flush waits, best effort, until the NATS server has processed what was
// sent so far. Failure is harmless: subscriptions are replayed on
// reconnect.
func (s *Server) flush() {
	if !s.nc.IsConnected() {
		return
	}
	if err := s.nc.FlushTimeout(flushTimeout); err != nil {
		s.log.Debug("natsplane: flush", "err", err)
	}
}

// handle runs on the subscription's nats.go goroutine.
func (e *subscription) handle(msg *nats.Msg) {
	e.mu.Lock()
	h := e.h
	var reply []byte
	if h == nil {
		reply = []byte(ackUnknownEndpoint + e.subject)
	} else if err := h(flatten(msg.Header), msg.Data); err != nil {
		text := err.Error()
		if text == "" {
			text = "rejected"
		}
		reply = []byte(text)
	}
	e.mu.Unlock()
	if msg.Reply == "" {
		return // a publish, not a request: nobody waits for an ack
	}
	if err := msg.Respond(reply); err != nil {
		e.log.Debug("natsplane: reply", "subject", e.subject, "err", err)
	}
}

// flatten turns NATS headers into the plane's map, keeping the first value
// of each key. It returns nil when there are none.
func flatten(h nats.Header) map[string]string {
	if len(h) == 0 {
		return nil
	}
	m := make(map[string]string, len(h))
	for k, v := range h {
		if len(v) > 0 {
			m[k] = v[0]
		}
	}
	return m
}

// Unregister unsubscribes from subject, waits for a handler call in
// progress and, when connected, for the NATS server to drop the interest.
// Requests still queued in the client library are dropped (their senders
// time out); one already being delivered gets "Unknown endpoint: <subject>".
func (s *Server) Unregister(subject string) error {
	s.mu.Lock()
	e, ok := s.subs[subject]
	delete(s.subs, subject)
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %s", ErrNotRegistered, subject)
	}
	err := e.stop()
	s.flush()
	return err
}

func (e *subscription) stop() error {
	err := e.sub.Unsubscribe()
	e.mu.Lock()
	e.h = nil
	e.mu.Unlock()
	if err != nil && !errors.Is(err, nats.ErrConnectionClosed) && !errors.Is(err, nats.ErrBadSubscription) {
		return fmt.Errorf("natsplane: unsubscribe %s: %w", e.subject, err)
	}
	return nil
}

// Close unsubscribes from every subject and waits for running handler
// calls. Later Registers fail with ErrClosed. It is idempotent; it returns
// the unsubscribe errors joined, in subject order.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	subs := s.subs
	s.subs = make(map[string]*subscription)
	s.mu.Unlock()
	var errs []error
	for _, subject := range sortedKeys(subs) {
		if err := subs[subject].stop(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(subs) > 0 {
		s.flush()
	}
	return errors.Join(errs...)
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
