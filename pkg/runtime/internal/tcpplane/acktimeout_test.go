package tcpplane

import (
	"errors"
	"testing"
	"time"
)

// A peer that is alive but slow to ack (its handler stalls the
// connection) fails only the request whose ack timed out: the connection
// stays, a request queued behind it on the same connection is acked once
// the peer catches up, and the late ack of the abandoned request is
// dropped, not given to the next one.
func TestAckTimeoutOnLiveConnectionFailsOnlyThatRequest(t *testing.T) {
	s, entered, release := blockingServer(t)
	c := newClient(t, ClientConfig{PoolSize: 1, AckTimeout: time.Second})
	first := make(chan error, 1)
	go func() { first <- c.Send(t.Context(), s.Addr(), "ep", nil, []byte("a")) }()
	<-entered
	c.mu.Lock()
	conn := c.pools[s.Addr()].conns[0]
	c.mu.Unlock()
	second := make(chan error, 1)
	time.Sleep(250 * time.Millisecond) // its ack timer runs out well after the first's
	go func() { second <- c.Send(t.Context(), s.Addr(), "ep", nil, []byte("b")) }()

	err := <-first
	if !errors.Is(err, ErrAckTimeout) || errors.Is(err, ErrConnLost) {
		t.Fatalf("the stalled request = %v, want ErrAckTimeout alone (the connection is alive)", err)
	}
	if conn.broken() {
		t.Fatal("the ack timeout closed a live connection")
	}
	release() // the peer catches up: acks the first request (dropped), then the second
	if err := <-second; err != nil {
		t.Fatalf("the request queued behind the stalled one on the same connection = %v, want acked", err)
	}
	if err := c.Send(t.Context(), s.Addr(), "ep", nil, nil); err != nil {
		t.Fatalf("a later request = %v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.pools[s.Addr()]; len(p.conns) != 1 || p.conns[0] != conn {
		t.Fatal("the live connection was replaced")
	}
}

// A peer that acks nothing at all for DeadTimeout while requests wait is
// taken for gone: the next ack timeout fails the connection (ErrConnLost,
// which callers treat as "cannot connect").
func TestAckTimeoutOnSilentPeerFailsTheConnection(t *testing.T) {
	s, entered, _ := blockingServer(t)
	c := newClient(t, ClientConfig{PoolSize: 1, AckTimeout: 200 * time.Millisecond, DeadTimeout: 600 * time.Millisecond})
	start := time.Now()
	if err := c.Send(t.Context(), s.Addr(), "ep", nil, nil); !errors.Is(err, ErrAckTimeout) || errors.Is(err, ErrConnLost) {
		t.Fatalf("the first timed-out request = %v, want ErrAckTimeout alone (silent for less than DeadTimeout)", err)
	}
	<-entered
	time.Sleep(time.Until(start.Add(500 * time.Millisecond)))
	err := c.Send(t.Context(), s.Addr(), "ep", nil, nil)
	if !errors.Is(err, ErrConnLost) || !errors.Is(err, ErrAckTimeout) {
		t.Fatalf("a request timed out after %v of silence = %v, want ErrConnLost (and ErrAckTimeout)", time.Since(start), err)
	}
}
