package testenv

import (
	"fmt"
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
	port    int
	running *server.Server
}

// StartNATS starts a NATS server. It is stopped when the test ends.
func StartNATS(t testing.TB) *NATS {
	t.Helper()
	n := &NATS{port: FreePort(t)}
	n.URL = fmt.Sprintf("nats://127.0.0.1:%d", n.port)
	if err := n.Start(); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(n.Stop)
	return n
}

// Start starts the server again after Stop, on the same port.
func (n *NATS) Start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.running != nil {
		return nil
	}
	opts := &server.Options{
		Host:   "127.0.0.1",
		Port:   n.port,
		NoLog:  true,
		NoSigs: true,
	}
	var lastErr error
	for range 50 {
		s, err := server.NewServer(opts)
		if err != nil {
			return fmt.Errorf("start nats: %w", err)
		}
		go s.Start()
		if s.ReadyForConnections(5 * time.Second) {
			n.running = s
			return nil
		}
		s.Shutdown()
		lastErr = fmt.Errorf("start nats: not ready on port %d", n.port)
		time.Sleep(100 * time.Millisecond)
	}
	return lastErr
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
