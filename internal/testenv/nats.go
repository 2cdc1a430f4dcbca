package testenv

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// NATS is an in-process NATS server listening on 127.0.0.1.
type NATS struct {
	// URL is the client URL, e.g. "nats://127.0.0.1:42223".
	URL string

	mu      sync.Mutex
	port    int // server.RANDOM_PORT until the first start, then its port
	running *server.Server
}

// StartNATS starts a NATS server on a port the kernel picks. It is
// stopped when the test ends.
func StartNATS(t testing.TB) *NATS {
	t.Helper()
	n := &NATS{port: server.RANDOM_PORT}
	if err := n.Start(); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(n.Stop)
	return n
}

// Start starts the server again after Stop, on the same port, so that
// clients reconnect. NATS serves no unix sockets: a restart must bind the
// port the first start was given, and if another process took it in the
// meantime Start retries for a few seconds, then fails.
func (n *NATS) Start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.running != nil {
		return nil
	}
	var err error
	for range 50 {
		var s *server.Server
		if s, err = n.start(); err == nil {
			n.running = s
			if n.port == server.RANDOM_PORT {
				addr := s.Addr().(*net.TCPAddr)
				n.port = addr.Port
				n.URL = "nats://" + addr.String()
			}
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// start starts one server and waits until it accepts connections.
func (n *NATS) start() (*server.Server, error) {
	opts := &server.Options{
		Host:   "127.0.0.1",
		Port:   n.port,
		NoLog:  true,
		NoSigs: true,
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("start nats: %w", err)
	}
	go s.Start()
	if !s.ReadyForConnections(5 * time.Second) {
		s.Shutdown()
		return nil, fmt.Errorf("start nats: not ready on 127.0.0.1 port %d", n.port)
	}
	return s, nil
}

// Stop shuts the server down. It is safe to call twice.
func (n *NATS) Stop() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.running == nil {
		return
	}
	n.running.Shutdown()
	n.running.WaitForShutdown()
	n.running = nil
}
