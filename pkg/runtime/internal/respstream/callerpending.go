package respstream

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// ErrInstanceLeft is Register's error for an instance that left discovery
// moments ago.
var ErrInstanceLeft = errors.New("respstream: the instance left discovery")

// Instance names one instance of one endpoint (the endpoint's path, the
// instance id).
type Instance struct {
	Endpoint string
	ID       uint64
}

// Pending is a response stream the caller registered, from before the
// worker calls home until the call ends (Server.Release).
type Pending struct {
	subject string
	id      uint64 // stream id on a shared connection
	inst    Instance
	ready   chan Stream // receives the stream once the worker opened it
	// gone ends when the instance left discovery (a context, so that the
	// established stream can react with context.AfterFunc, without a
	// goroutine per call); left is when, in Unix nanoseconds.
	gone     context.Context
	markGone context.CancelFunc
	left     atomic.Int64
}

// Subject returns the subject that names the stream to the worker.
func (p *Pending) Subject() string { return p.subject }

// StreamID returns the stream's id on a shared connection.
func (p *Pending) StreamID() uint64 { return p.id }

// Opened receives the stream once the worker opened it.
func (p *Pending) Opened() <-chan Stream { return p.ready }

// Gone is closed once the instance left discovery (or the stream was
// released).
func (p *Pending) Gone() <-chan struct{} { return p.gone.Done() }

// leftAt returns when the instance left discovery (zero if it has not).
func (p *Pending) leftAt() time.Time {
	if ns := p.left.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// Register creates a pending stream for a call to inst. It fails at once
// with ErrInstanceLeft if inst left discovery moments ago.
func (s *Server) Register(inst Instance) (*Pending, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if until, ok := s.tombstones[inst]; ok {
		if time.Now().Before(until) {
			return nil, ErrInstanceLeft
		}
		delete(s.tombstones, inst)
	}
	p := &Pending{
		subject: uuid.NewString(),
		id:      s.nextID.Add(1),
		inst:    inst,
		ready:   make(chan Stream, 1),
	}
	p.gone, p.markGone = context.WithCancel(context.Background())
	s.pending[p.subject] = p
	return p, nil
}

// Release forgets p: a connection that arrives later is closed, and one
// that arrived but was not taken is closed here.
func (s *Server) Release(p *Pending) {
	s.mu.Lock()
	delete(s.pending, p.subject)
	delete(s.established, p.subject)
	s.mu.Unlock()
	p.markGone() // releases the context
	select {
	case st := <-p.ready:
		st.Close(false)
	default:
	}
}

// CancelInstance fails every pending stream of inst, tells its established
// streams (which then may stay silent only for the orphan timeout), and
// refuses new streams for a short while: the instance left discovery.
func (s *Server) CancelInstance(inst Instance) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.tombstones[inst] = now.Add(tombstoneTTL)
	for _, m := range []map[string]*Pending{s.pending, s.established} {
		for subj, p := range m {
			if p.inst == inst {
				delete(m, subj)
				p.left.Store(now.UnixNano())
				p.markGone()
			}
		}
	}
}

// ClearTombstone is called when inst (re)appears in discovery.
func (s *Server) ClearTombstone(inst Instance) {
	s.mu.Lock()
	delete(s.tombstones, inst)
	s.mu.Unlock()
}
