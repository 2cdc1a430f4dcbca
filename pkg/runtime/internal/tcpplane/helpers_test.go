package tcpplane

import (
	"context"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/plane"
)

// startServer listens on a loopback port, runs the server until the test
// ends and registers the given handlers.
func startServer(t testing.TB, cfg ServerConfig, handlers map[string]plane.Handler) *Server {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	s, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for p, h := range handlers {
		s.Register(p, h)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return s
}

func newClient(t testing.TB, cfg ClientConfig) *Client {
	t.Helper()
	c := NewClient(cfg)
	t.Cleanup(func() { c.Close() })
	return c
}

// accept is a handler that accepts everything.
func accept(map[string]string, []byte) error { return nil }
