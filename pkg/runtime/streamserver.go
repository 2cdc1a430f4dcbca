package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/codec"
)

const (
	handshakeTimeout = 10 * time.Second
	tombstoneTTL     = 5 * time.Second
)

// streamKeepAlive is the TCP keep-alive of every response stream a caller
// accepts. The worker sends and the caller only reads, so when the
// worker's host goes silent (a network partition, a power loss: no FIN or
// RST ever comes) nothing tells the caller's socket. Discovery does not
// either: an established stream outlives its instance's removal, so that
// a worker draining at shutdown finishes it. With Go's default keep-alive
// (15 s idle, then 9 probes 15 s apart) the read would wait about 2.5
// minutes; with this one the connection fails about 5 s after the last
// packet from the worker's host, and the call ends Disconnected, which
// migration re-issues. Probes are answered by the worker's kernel, so a
// slow engine is never taken for a dead one.
var streamKeepAlive = net.KeepAliveConfig{Enable: true, Idle: 2 * time.Second, Interval: time.Second, Count: 3}

// instanceRef names one instance of one endpoint.
type instanceRef struct {
	ep EndpointID
	id uint64
}

// pendingStream is a response stream the caller registered, from before
// the worker calls home until the call ends.
type pendingStream struct {
	subject string
	id      uint64 // stream id on a shared connection
	inst    instanceRef
	ready   chan responseStream // receives the stream once the worker opened it
	// gone ends when the instance left discovery (a context, so that the
	// established stream can react with context.AfterFunc, without a
	// goroutine per call); left is when, in Unix nanoseconds.
	gone     context.Context
	markGone context.CancelFunc
	left     atomic.Int64
}

// leftAt returns when the instance left discovery (zero if it has not).
func (p *pendingStream) leftAt() time.Time {
	if ns := p.left.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// streamServer is the caller's TCP server that workers call home to. One
// listener per process, started on first use. It takes classic call-home
// connections (one stream each) and shared connections (many streams,
// streammux.go) on the same port.
type streamServer struct {
	ln            net.Listener
	advertise     string
	serverID      string // names this server to workers that share connections
	maxSize       int
	window        int           // flow-control window of a stream on a shared connection
	orphanTimeout time.Duration // Config.OrphanedStreamTimeout
	log           *slog.Logger

	nextID atomic.Uint64 // stream ids, from 1

	mu          sync.Mutex
	pending     map[string]*pendingStream // waiting for the worker to call home
	established map[string]*pendingStream // connected, until the call ends
	tombstones  map[instanceRef]time.Time
	conns       map[net.Conn]struct{} // handshaking, or shared: this server reads them
	shared      map[*muxConn]struct{}
	wg          sync.WaitGroup
}

func listenStreams(cfg Config, log *slog.Logger) (*streamServer, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.ResponseStreamBindHost(), fmt.Sprint(cfg.ResponseStreamPort)))
	if err != nil {
		return nil, fmt.Errorf("runtime: response stream server: %w", err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	window := cfg.ResponseStreamWindow
	if window <= 0 {
		window = 256 << 10
	}
	return &streamServer{
		ln:            ln,
		advertise:     net.JoinHostPort(cfg.ResponseStreamHost, port),
		serverID:      uuid.NewString(),
		maxSize:       cfg.MaxMessageSize,
		window:        window,
		orphanTimeout: cfg.OrphanedStreamTimeout,
		log:           log,
		pending:       make(map[string]*pendingStream),
		established:   make(map[string]*pendingStream),
		tombstones:    make(map[instanceRef]time.Time),
		conns:         make(map[net.Conn]struct{}),
		shared:        make(map[*muxConn]struct{}),
	}, nil
}

// run accepts call-home connections until ctx ends.
func (s *streamServer) run(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { s.ln.Close() })
	defer stop()
	defer s.wg.Wait()
	defer s.closeConns()
	var delay time.Duration
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			// Out of file descriptors and the like: back off, keep serving.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.log.Warn("runtime: response stream accept failed", "err", err, "retry_in", delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		setTCPOptions(conn)
		// The caller closes each response stream first; without linger 0
		// every call would leave a TIME_WAIT socket behind, and at a few
		// thousand calls per second the loopback ports run out.
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
			_ = tc.SetKeepAliveConfig(streamKeepAlive)
		}
		s.mu.Lock()
		s.conns[conn] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handshake(conn)
		}()
	}
}

func (s *streamServer) closeConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
}

// handshake reads the worker's first frame. A classic handshake hands the
// connection to the pending stream it names; a shared-connection
// handshake makes this goroutine the connection's reader until it ends.
func (s *streamServer) handshake(conn net.Conn) {
	defer func() {
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
	}()
	_ = conn.SetReadDeadline(time.Now().Add(handshakeTimeout))
	msg, err := codec.ReadMessage(conn, s.maxSize)
	var hs firstFrame
	if err == nil {
		err = json.Unmarshal(msg.Header, &hs)
	}
	if err != nil {
		s.log.Warn("runtime: bad response stream handshake", "remote", conn.RemoteAddr(), "err", err)
		conn.Close()
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	if hs.StreamType == streamTypeResponseMux {
		s.serveShared(conn, hs)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pending[hs.Subject]
	if p == nil || hs.StreamType != streamTypeResponse {
		s.log.Debug("runtime: call-home for an unknown stream", "subject", hs.Subject, "stream_type", hs.StreamType)
		conn.Close()
		return
	}
	delete(s.pending, hs.Subject)
	s.established[hs.Subject] = p
	// Hand over under the lock, so that release either sees the entry (and
	// no connection comes) or finds the connection in ready and closes it.
	p.ready <- newConnStream(conn, s.maxSize, p, s.orphanTimeout) // buffered; one connection per subject
}

// open establishes the pending stream that a shared connection's opening
// frame names; it reports false if there is none (released, cancelled) or
// the stream id does not match.
func (s *streamServer) open(mc *muxConn, id uint64, hs handshake) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pending[hs.Subject]
	if p == nil || p.id != id || hs.StreamType != streamTypeResponse {
		s.log.Debug("runtime: stream opened for an unknown subject", "subject", hs.Subject, "stream_id", id)
		return false
	}
	st := mc.add(id, p)
	if st == nil {
		return false // the connection failed meanwhile
	}
	delete(s.pending, hs.Subject)
	s.established[hs.Subject] = p
	p.ready <- st // buffered; see handshake
	return true
}

// register creates a pending stream for a call to inst. It fails at once
// if inst left discovery moments ago.
func (s *streamServer) register(inst instanceRef) (*pendingStream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if until, ok := s.tombstones[inst]; ok {
		if time.Now().Before(until) {
			return nil, NewError(TypeDisconnected, "instance %x of %s left discovery", inst.id, inst.ep.Path())
		}
		delete(s.tombstones, inst)
	}
	p := &pendingStream{
		subject: uuid.NewString(),
		id:      s.nextID.Add(1),
		inst:    inst,
		ready:   make(chan responseStream, 1),
	}
	p.gone, p.markGone = context.WithCancel(context.Background())
	s.pending[p.subject] = p
	return p, nil
}

// release forgets p: a connection that arrives later is closed, and one
// that arrived but was not taken is closed here.
func (s *streamServer) release(p *pendingStream) {
	s.mu.Lock()
	delete(s.pending, p.subject)
	delete(s.established, p.subject)
	s.mu.Unlock()
	p.markGone() // releases the context
	select {
	case st := <-p.ready:
		st.close(false)
	default:
	}
}

// cancelInstance fails every pending stream of inst, tells its established
// streams (which then may stay silent only for OrphanedStreamTimeout), and
// refuses new streams for a short while: the instance left discovery.
func (s *streamServer) cancelInstance(inst instanceRef) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.tombstones[inst] = now.Add(tombstoneTTL)
	for _, m := range []map[string]*pendingStream{s.pending, s.established} {
		for subj, p := range m {
			if p.inst == inst {
				delete(m, subj)
				p.left.Store(now.UnixNano())
				p.markGone()
			}
		}
	}
}

// clearTombstone is called when inst (re)appears in discovery.
func (s *streamServer) clearTombstone(inst instanceRef) {
	s.mu.Lock()
	delete(s.tombstones, inst)
	s.mu.Unlock()
}

func setTCPOptions(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
}
