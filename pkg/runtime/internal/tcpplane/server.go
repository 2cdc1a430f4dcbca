package tcpplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/plane"
)

// ServerConfig configures a Server.
type ServerConfig struct {
	// Addr is the "host:port" to listen on. Port 0 asks the OS for a free
	// port; an empty Addr means ":0" (all interfaces, OS-assigned port).
	Addr string
	// MaxMessageSize bounds path+headers+payload of one request. Larger
	// requests are answered with the ack "message too large" and skipped.
	// 0 means DefaultMaxMessageSize.
	MaxMessageSize int
	// Logger receives connection-level diagnostics. nil discards them.
	Logger *slog.Logger
}

// Server is the worker side of the TCP request plane: one listener shared
// by every endpoint of the process, routing each request by its path to a
// registered plane.Handler.
type Server struct {
	ln      net.Listener
	addr    string
	maxSize int
	log     *slog.Logger

	hmu      sync.RWMutex
	handlers map[string]plane.Handler

	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	closed  bool
	running bool
	wg      sync.WaitGroup // one per connection goroutine
}

// Listen binds cfg.Addr and returns a Server that accepts connections once
// Run is called.
func Listen(cfg ServerConfig) (*Server, error) {
	addr := cfg.Addr
	if addr == "" {
		addr = ":0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("tcpplane: listen: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{
		ln:       ln,
		addr:     ln.Addr().String(),
		maxSize:  maxSizeOr(cfg.MaxMessageSize),
		log:      log,
		handlers: make(map[string]plane.Handler),
		conns:    make(map[net.Conn]struct{}),
	}, nil
}

// Addr returns the bound "host:port".
func (s *Server) Addr() string {
	return s.addr
}

// Register routes requests for path to h, replacing any previous handler.
func (s *Server) Register(path string, h plane.Handler) {
	s.hmu.Lock()
	s.handlers[path] = h
	s.hmu.Unlock()
}

// Unregister removes the handler of path. Later requests for it are acked
// with "Unknown endpoint: <path>". A call of the handler already in
// progress is not waited for.
func (s *Server) Unregister(path string) {
	s.hmu.Lock()
	delete(s.handlers, path)
	s.hmu.Unlock()
}

func (s *Server) handler(path []byte) plane.Handler {
	s.hmu.RLock()
	h := s.handlers[string(path)]
	s.hmu.RUnlock()
	return h
}

// Run accepts connections and serves each on its own goroutine until ctx
// ends or Close is called. It then closes every connection and returns once
// all connection goroutines have exited: nil for such a clean stop, or the
// accept error that ended it. Run may be called only once.
func (s *Server) Run(ctx context.Context) error {
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return ErrClosed
	case s.running:
		s.mu.Unlock()
		return errors.New("tcpplane: Run called twice")
	}
	s.running = true
	s.mu.Unlock()

	stopped := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(stopped)
		s.ln.Close()
	})
	defer func() {
		if !stop() {
			<-stopped
		}
	}()

	err := s.acceptLoop()
	s.Close()
	return err
}

func (s *Server) acceptLoop() error {
	var delay time.Duration
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// Transient (e.g. out of descriptors): back off like
				// net/http does.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.log.Warn("tcpplane: accept", "err", err, "retry_in", delay)
				time.Sleep(delay)
				continue
			}
			return fmt.Errorf("tcpplane: accept: %w", err)
		}
		delay = 0
		if !s.track(nc) {
			nc.Close()
			return nil
		}
		go s.serve(nc)
	}
}

// track records nc and reserves its goroutine in s.wg; it reports false if
// the server is closed.
func (s *Server) track(nc net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[nc] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *Server) serve(nc net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, nc)
		s.mu.Unlock()
		nc.Close()
	}()
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	if err := newServerConn(s, nc).serve(); err != nil && !errors.Is(err, net.ErrClosed) {
		s.log.Debug("tcpplane: connection closed", "remote", nc.RemoteAddr().String(), "err", err)
	}
}

// Close stops accepting, closes every connection and waits for their
// goroutines. It also ends Run. It is idempotent and returns nil.
func (s *Server) Close() error {
	s.mu.Lock()
	first := !s.closed
	s.closed = true
	conns := make([]net.Conn, 0, len(s.conns))
	for nc := range s.conns {
		conns = append(conns, nc)
	}
	s.mu.Unlock()
	if first {
		s.ln.Close()
	}
	for _, nc := range conns {
		nc.Close()
	}
	s.wg.Wait()
	return nil
}
