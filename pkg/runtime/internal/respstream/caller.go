package respstream

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

// The caller's end of the response streams: the server that workers call
// home to (this file), its pending streams (callerpending.go), its shared
// connections (callerconn.go, callerstream.go) and its classic ones
// (callerdirect.go).

const (
	handshakeTimeout = 10 * time.Second
	tombstoneTTL     = 5 * time.Second
	// defaultWindow is a shared stream's window when ServerConfig leaves
	// it unset.
	defaultWindow = 256 << 10
)

// ServerConfig configures a caller's Server.
type ServerConfig struct {
	// Addr is the host:port the server listens on (port 0: any).
	Addr string
	// AdvertiseHost is the host workers are told to call home to; the
	// port is the one the server listens on.
	AdvertiseHost string
	// MaxMessageSize bounds the frames the server reads.
	MaxMessageSize int
	// Window is the flow-control window of a stream on a shared
	// connection (<= 0: 256 KiB).
	Window int
	// OrphanTimeout bounds the silence of an established stream whose
	// instance left discovery (<= 0: none).
	OrphanTimeout time.Duration
}

// Server is the caller's TCP server that workers call home to. One
// listener per process, started on first use. It takes classic call-home
// connections (one stream each) and shared connections (many streams,
// callerconn.go) on the same port. Run serves it; a Server is safe for
// concurrent use.
type Server struct {
	ln            net.Listener
	advertise     string
	serverID      string // names this server to workers that share connections
	maxSize       int
	window        int           // flow-control window of a stream on a shared connection
	orphanTimeout time.Duration // ServerConfig.OrphanTimeout
	log           *slog.Logger

	nextID atomic.Uint64 // stream ids, from 1

	mu          sync.Mutex
	pending     map[string]*Pending // waiting for the worker to call home
	established map[string]*Pending // connected, until the call ends
	tombstones  map[Instance]time.Time
	conns       map[net.Conn]struct{} // handshaking, or shared: this server reads them
	shared      map[*muxConn]struct{}
	wg          sync.WaitGroup
}

// Listen opens the server's listener; it starts nothing (Run serves it).
// Its logs go to log.
func Listen(cfg ServerConfig, log *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("runtime: response stream server: %w", err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	window := cfg.Window
	if window <= 0 {
		window = defaultWindow
	}
	return &Server{
		ln:            ln,
		advertise:     net.JoinHostPort(cfg.AdvertiseHost, port),
		serverID:      uuid.NewString(),
		maxSize:       cfg.MaxMessageSize,
		window:        window,
		orphanTimeout: cfg.OrphanTimeout,
		log:           log,
		pending:       make(map[string]*Pending),
		established:   make(map[string]*Pending),
		tombstones:    make(map[Instance]time.Time),
		conns:         make(map[net.Conn]struct{}),
		shared:        make(map[*muxConn]struct{}),
	}, nil
}

// Advertise returns the address workers are told to call home to.
func (s *Server) Advertise() string { return s.advertise }

// ID returns the id that names this server to workers that share
// connections (it changes when the process restarts on the same port).
func (s *Server) ID() string { return s.serverID }

// Close closes the listener: a Run returns, and a server that never ran
// releases its port.
func (s *Server) Close() error { return s.ln.Close() }

// Run accepts call-home connections until ctx ends (or Close), then
// closes the connections it reads and waits for their goroutines.
func (s *Server) Run(ctx context.Context) error {
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

func (s *Server) closeConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
}

// handshake reads the worker's first frame. A classic handshake hands the
// connection to the pending stream it names; a shared-connection
// handshake makes this goroutine the connection's reader until it ends.
func (s *Server) handshake(conn net.Conn) {
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
	if p == nil || hs.StreamType != StreamTypeResponse {
		s.log.Debug("runtime: call-home for an unknown stream", "subject", hs.Subject, "stream_type", hs.StreamType)
		conn.Close()
		return
	}
	delete(s.pending, hs.Subject)
	s.established[hs.Subject] = p
	// Hand over under the lock, so that Release either sees the entry (and
	// no connection comes) or finds the connection in ready and closes it.
	p.ready <- newConnStream(conn, s.maxSize, p, s.orphanTimeout) // buffered; one connection per subject
}

// open establishes the pending stream that a shared connection's opening
// frame names; it reports false if there is none (released, cancelled) or
// the stream id does not match.
func (s *Server) open(mc *muxConn, id uint64, hs handshake) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pending[hs.Subject]
	if p == nil || p.id != id || hs.StreamType != StreamTypeResponse {
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
