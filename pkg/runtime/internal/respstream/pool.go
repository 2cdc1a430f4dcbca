package respstream

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// The worker's end of shared response connections (docs/protocol.md
// §7.8): one connection per caller (address and server id), dialled when
// the first request needs it, closed when idle, dialled again on demand.

// errLinkClosed is the write error of a shared connection that was closed
// (idle, shut down, or failed).
var errLinkClosed = errors.New("runtime: shared response connection closed")

// errLinkDead makes attach try another connection: the one it found was
// closing.
var errLinkDead = errors.New("runtime: shared response connection is closing")

// errLinkLost: the connection failed while a stream was being opened on
// it.
var errLinkLost = errors.New("runtime: shared response connection failed")

// Why the watchdog gives a shared connection up (§7.8.6).
var (
	// errCallerHostSilent: the caller's host acknowledged nothing of what
	// was outstanding for the connect timeout (it went away, or the
	// network between is cut).
	errCallerHostSilent = errors.New("runtime: the caller's host acknowledged nothing of the data in flight")
	// errCallerSilent: the caller's process answered nothing it was sent
	// for six times the connect timeout (it is stopped or stuck; a live
	// one answers within a second).
	errCallerSilent = errors.New("runtime: the caller sent nothing since frames were written to it")
)

// maxAttach bounds how often a stream is opened again on a new connection
// after the one it was on failed before the caller acknowledged it.
const maxAttach = 3

// unackedPool recycles the buffers in which streams keep their frames
// until the caller acknowledges them.
var unackedPool = sync.Pool{New: func() any { return new([]byte) }}

// maxSpareWriteBuffer bounds the write buffer a shared connection keeps
// between writes (one huge item must not pin its buffer).
const maxSpareWriteBuffer = 1 << 20

// Pool holds a worker's shared response connections. It starts one
// goroutine per connection (dial, then read) and stops them in Close. A
// Pool is safe for concurrent use.
type Pool struct {
	connectTimeout time.Duration
	idleTimeout    time.Duration
	log            *slog.Logger

	ctx    context.Context // ends in close: aborts dials
	cancel context.CancelFunc

	mu     sync.Mutex
	links  map[muxKey]*muxLink
	closed bool
	wg     sync.WaitGroup
}

// muxKey names a caller: its response-stream address and server id.
type muxKey struct{ addr, serverID string }

// NewPool returns an empty pool. A connection is dialled within
// connectTimeout, and the caller taken for gone when it leaves what it
// was sent unanswered for six times that long; one that carries no
// stream for idleTimeout is closed (never if idleTimeout <= 0). Failed
// connections are logged to log.
func NewPool(connectTimeout, idleTimeout time.Duration, log *slog.Logger) *Pool {
	ctx, cancel := context.WithCancel(context.Background())
	return &Pool{
		connectTimeout: connectTimeout,
		idleTimeout:    idleTimeout,
		log:            log,
		ctx:            ctx,
		cancel:         cancel,
		links:          make(map[muxKey]*muxLink),
	}
}

// Open opens the stream the caller offered in t on the shared connection
// to that caller, dialling it if there is none.
func (p *Pool) Open(rc Request, t Target) (Out, error) {
	o, err := p.open(rc, t)
	if err != nil {
		return nil, err
	}
	return o, nil
}

func (p *Pool) open(rc Request, t Target) (*muxOut, error) {
	hs, _ := json.Marshal(handshake{Subject: t.Subject, StreamType: StreamTypeResponse})
	o := &muxOut{pool: p, key: muxKey{t.Address, t.ServerID}, id: t.StreamID, opening: hs, rc: rc, more: make(chan struct{}, 1)}
	if err := o.attach(); err != nil {
		return nil, err
	}
	return o, nil
}

// link returns the connection to key, once it is usable.
func (p *Pool) link(rc Request, key muxKey) (*muxLink, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrClosed
	}
	l := p.links[key]
	if l == nil {
		l = &muxLink{pool: p, key: key, ready: make(chan struct{}), streams: make(map[uint64]*muxSlot)}
		l.w.flushed.L = &l.w.mu
		l.w.onErr = l.fail
		l.w.onWrite = l.wrote
		p.links[key] = l
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			l.run()
		}()
	}
	p.mu.Unlock()
	select {
	case <-l.ready:
	case <-rc.Done():
		return nil, context.Cause(rc)
	}
	if l.err != nil {
		return nil, l.err
	}
	return l, nil
}

// forget removes l from the pool if it is still the connection to its
// caller.
func (p *Pool) forget(l *muxLink) {
	p.mu.Lock()
	if p.links[l.key] == l {
		delete(p.links, l.key)
	}
	p.mu.Unlock()
}

// Size returns how many shared connections are open or being dialled.
func (p *Pool) Size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// Close closes every connection (their acknowledged streams' requests
// are killed) and waits for their goroutines.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	links := make([]*muxLink, 0, len(p.links))
	for _, l := range p.links {
		links = append(links, l)
	}
	p.mu.Unlock()
	p.cancel()
	for _, l := range links {
		l.fail(errLinkClosed)
	}
	p.wg.Wait()
}
