package mocker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
)

// The bootstrap handoff of disaggregated serving (docs/protocol.md,
// "Bootstrap handoff"): a decode engine connects to the prefill engine's
// bootstrap server, sends the room id as 8 bytes little-endian, and reads
// one byte, bootstrapACK, once the prefill of that room is done. A
// connection closed without it means the prefill failed, or did not end
// within bootstrapTimeout.
const (
	bootstrapACK     = 0x01
	bootstrapTimeout = 30 * time.Second
	// roomMemory is how long a finished room is remembered for a decode
	// engine that asks after the prefill ended.
	roomMemory = 2 * time.Minute
)

// bootstrapServer is a prefill engine's bootstrap server. The engine owns
// it: listenBootstrap in Start, serve on a goroutine of the engine, close
// in Cleanup. Safe for concurrent use.
type bootstrapServer struct {
	ln      net.Listener
	log     *slog.Logger
	timeout time.Duration // for the room id and for the prefill
	memory  time.Duration // of finished rooms
	quit    chan struct{} // closed by close

	mu        sync.Mutex
	rooms     map[uint64]*room
	conns     map[net.Conn]struct{}
	closed    bool
	lastSweep time.Time
	wg        sync.WaitGroup // connection handlers
}

// room is the rendezvous of one prefill and the decode engines waiting
// for it.
type room struct {
	created  time.Time
	finished time.Time     // zero while the prefill runs
	ok       bool          // the prefill succeeded
	done     chan struct{} // closed when finished
}

// listenBootstrap listens on addr (host:port; port 0 picks one).
func listenBootstrap(addr string, log *slog.Logger) (*bootstrapServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("mocker: bootstrap server: %w", err)
	}
	return &bootstrapServer{
		ln: ln, log: log, timeout: bootstrapTimeout, memory: roomMemory,
		quit: make(chan struct{}), rooms: map[uint64]*room{}, conns: map[net.Conn]struct{}{},
	}, nil
}

// port is the port the server listens on.
func (s *bootstrapServer) port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// serve accepts connections until close, each handled on its own
// goroutine; it returns when the listener is closed.
func (s *bootstrapServer) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.log.Warn("mocker: bootstrap server: accept", "err", err)
			}
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.handle(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			_ = c.Close()
		}()
	}
}

// handle reads a room id from c and acknowledges it once the room's
// prefill succeeded; it returns (and the caller closes c) without an ACK
// when the prefill failed, the wait timed out or the server closes.
func (s *bootstrapServer) handle(c net.Conn) {
	var b [8]byte
	_ = c.SetReadDeadline(time.Now().Add(s.timeout))
	if _, err := io.ReadFull(c, b[:]); err != nil {
		s.log.Debug("mocker: bootstrap server: reading the room id", "remote", c.RemoteAddr(), "err", err)
		return
	}
	id := binary.LittleEndian.Uint64(b[:])
	r := s.room(id)
	t := time.NewTimer(s.timeout)
	defer t.Stop()
	select {
	case <-r.done:
	case <-t.C:
		s.log.Warn("mocker: bootstrap server: room not done in time", "room", id, "timeout", s.timeout)
		return
	case <-s.quit:
		return
	}
	if !r.ok {
		return
	}
	_ = c.SetWriteDeadline(time.Now().Add(s.timeout))
	if _, err := c.Write([]byte{bootstrapACK}); err != nil {
		s.log.Debug("mocker: bootstrap server: ack", "room", id, "err", err)
	}
}

// room returns the room with id, making it if needed.
func (s *bootstrapServer) room(id uint64) *room {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.sweep(now)
	r := s.rooms[id]
	if r == nil {
		r = &room{created: now, done: make(chan struct{})}
		s.rooms[id] = r
	}
	return r
}

// complete ends the prefill of room id: waiting and later decode engines
// get the ACK if ok, a closed connection otherwise. Only the first call
// for a room counts.
func (s *bootstrapServer) complete(id uint64, ok bool) {
	r := s.room(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !r.finished.IsZero() {
		return
	}
	r.finished, r.ok = time.Now(), ok
	close(r.done)
}

// sweep forgets rooms finished more than s.memory ago, and unfinished
// ones older than that (their waiters have timed out), at most once a
// second. The caller holds s.mu.
func (s *bootstrapServer) sweep(now time.Time) {
	if now.Sub(s.lastSweep) < time.Second {
		return
	}
	s.lastSweep = now
	for id, r := range s.rooms {
		if t := r.finished; !t.IsZero() && now.Sub(t) > s.memory || t.IsZero() && now.Sub(r.created) > s.memory+s.timeout {
			delete(s.rooms, id)
		}
	}
}

// close stops the server: the listener and every connection are closed,
// and close waits for the handlers. It is idempotent.
func (s *bootstrapServer) close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.quit)
	err := s.ln.Close()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("mocker: bootstrap server: %w", err)
	}
	return nil
}
