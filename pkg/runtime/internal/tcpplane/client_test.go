package tcpplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/plane"
)

func TestSendRoundTrip(t *testing.T) {
	type req struct {
		headers map[string]string
		payload string
	}
	got := make(chan req, 1)
	s := startServer(t, ServerConfig{}, map[string]plane.Handler{
		"7b/generate": func(h map[string]string, p []byte) error {
			got <- req{h, string(p)}
			return nil
		},
	})
	c := newClient(t, ClientConfig{})
	want := req{
		headers: map[string]string{"traceparent": "00-abc-def-01", "x-request-id": "r1"},
		payload: "envelope",
	}
	if err := c.Send(t.Context(), s.Addr(), "7b/generate", want.headers, []byte(want.payload)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, <-got, cmp.AllowUnexported(req{})); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	// No headers and no payload.
	if err := c.Send(t.Context(), s.Addr(), "7b/generate", nil, nil); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.headers != nil || r.payload != "" {
		t.Fatalf("got %+v, want nothing", r)
	}
}

// TestSendConcurrent sends 1000 requests from 50 goroutines over a pool.
// Odd requests are rejected with their own payload as the ack text, so
// every sender checks that it received its own ack: acks are matched to
// requests in order on every connection.
func TestSendConcurrent(t *testing.T) {
	var mu sync.Mutex
	count := 0
	s := startServer(t, ServerConfig{}, map[string]plane.Handler{
		"ep": func(_ map[string]string, p []byte) error {
			mu.Lock()
			count++
			mu.Unlock()
			n, _ := strconv.Atoi(string(p))
			if n%2 == 1 {
				return errors.New(string(p))
			}
			return nil
		},
	})
	c := newClient(t, ClientConfig{PoolSize: 4})
	const goroutines, each = 50, 20
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*each)
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				n := g*each + i
				err := c.Send(t.Context(), s.Addr(), "ep", nil, []byte(strconv.Itoa(n)))
				var ae *plane.AckError
				switch {
				case n%2 == 0 && err != nil:
					errs <- fmt.Errorf("request %d: %v", n, err)
				case n%2 == 1 && (!errors.As(err, &ae) || ae.Text != strconv.Itoa(n)):
					errs <- fmt.Errorf("request %d: got %v, want its own ack text", n, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if count != goroutines*each {
		t.Fatalf("handler saw %d requests, want %d", count, goroutines*each)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.pools[s.Addr()].conns); n < 1 || n > 4 {
		t.Fatalf("pool has %d connections, want 1..4", n)
	}
}

// TestSendFIFOSingleConn pipelines requests from many goroutines over one
// connection and checks that the handler saw them in the order they were
// written: the order in which their acks matched.
func TestSendFIFOSingleConn(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	s := startServer(t, ServerConfig{}, map[string]plane.Handler{
		"ep": func(_ map[string]string, p []byte) error {
			mu.Lock()
			seen = append(seen, string(p))
			mu.Unlock()
			return errors.New(string(p)) // echo: proves which ack matched which request
		},
	})
	c := newClient(t, ClientConfig{PoolSize: 1})
	var wg sync.WaitGroup
	for g := range 20 {
		wg.Go(func() {
			for i := range 25 {
				p := fmt.Sprintf("%d-%d", g, i)
				var ae *plane.AckError
				if err := c.Send(t.Context(), s.Addr(), "ep", nil, []byte(p)); !errors.As(err, &ae) || ae.Text != p {
					t.Errorf("send %s: %v", p, err)
				}
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	// Each goroutine sends serially, so its own requests must appear in
	// order in the single connection's stream.
	last := map[string]int{}
	for _, p := range seen {
		var g, i int
		fmt.Sscanf(p, "%d-%d", &g, &i)
		if prev, ok := last[strconv.Itoa(g)]; ok && i != prev+1 {
			t.Fatalf("goroutine %d: request %d after %d", g, i, prev)
		}
		last[strconv.Itoa(g)] = i
	}
	if len(seen) != 500 {
		t.Fatalf("handler saw %d requests", len(seen))
	}
}

func TestSendRejected(t *testing.T) {
	s := startServer(t, ServerConfig{MaxMessageSize: 1024}, map[string]plane.Handler{
		"ep":   accept,
		"busy": func(map[string]string, []byte) error { return errors.New("queue full") },
	})
	c := newClient(t, ClientConfig{})
	tests := []struct {
		name    string
		path    string
		payload []byte
		text    string
	}{
		{"unknown path", "nope/x", nil, "Unknown endpoint: nope/x"},
		{"handler error", "busy", nil, "queue full"},
		{"too large", "ep", make([]byte, 2000), "message too large"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Send(t.Context(), s.Addr(), tc.path, nil, tc.payload)
			var ae *plane.AckError
			if !errors.As(err, &ae) || ae.Text != tc.text {
				t.Fatalf("err = %v, want AckError %q", err, tc.text)
			}
			if want := "request plane: rejected: " + tc.text; err.Error() != want {
				t.Fatalf("Error() = %q, want %q", err.Error(), want)
			}
		})
	}
	// The connection survived the oversized frame and is still the only one.
	c.mu.Lock()
	before := append([]*clientConn(nil), c.pools[s.Addr()].conns...)
	c.mu.Unlock()
	if err := c.Send(t.Context(), s.Addr(), "ep", nil, []byte("ok")); err != nil {
		t.Fatalf("send after rejection: %v", err)
	}
	c.mu.Lock()
	after := c.pools[s.Addr()].conns
	c.mu.Unlock()
	if len(before) != 1 || len(after) != 1 || before[0] != after[0] {
		t.Fatalf("connections before %v after %v, want the same single one", before, after)
	}
}

func TestSendTooLargeLocally(t *testing.T) {
	c := newClient(t, ClientConfig{MaxMessageSize: 10})
	err := c.Send(t.Context(), "127.0.0.1:1", "ep", nil, make([]byte, 11))
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
}

// blockingServer serves "ep" with a handler that blocks until the test
// releases it, and reports each entry on entered.
func blockingServer(t *testing.T) (s *Server, entered <-chan struct{}, release func()) {
	in := make(chan struct{}, 16)
	unblock := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(unblock) }) }
	s = startServer(t, ServerConfig{}, map[string]plane.Handler{
		"ep": func(map[string]string, []byte) error {
			in <- struct{}{}
			<-unblock
			return nil
		},
	})
	t.Cleanup(release) // before the server's cleanup, which waits for handlers
	return s, in, release
}

func TestServerCloseFailsPending(t *testing.T) {
	s, entered, release := blockingServer(t)
	c := newClient(t, ClientConfig{AckTimeout: 10 * time.Second, PoolSize: 1})
	errc := make(chan error, 2)
	for range 2 {
		go func() { errc <- c.Send(t.Context(), s.Addr(), "ep", nil, nil) }()
	}
	<-entered
	// Both requests are on the wire: one in the handler, one behind it.
	for written := 0; written < 2; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		cc := c.pools[s.Addr()].conns[0]
		c.mu.Unlock()
		cc.mu.Lock()
		written = len(cc.pending)
		cc.mu.Unlock()
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	start := time.Now()
	for range 2 {
		if err := <-errc; !errors.Is(err, ErrConnLost) {
			t.Fatalf("pending send: err = %v, want ErrConnLost", err)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("pending sends failed after %v", d)
	}
	release()
	<-closed
	start = time.Now()
	if err := c.Send(t.Context(), s.Addr(), "ep", nil, nil); err == nil {
		t.Fatal("send to closed server succeeded")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("send to closed server took %v", d)
	}
}

func TestSendConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := newClient(t, ClientConfig{})
	start := time.Now()
	err = c.Send(t.Context(), addr, "ep", nil, nil)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("err = %v, want ECONNREFUSED", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("refused connection took %v", d)
	}
}

func TestSendConnectTimeout(t *testing.T) {
	// A listener whose backlog is never accepted still completes TCP
	// handshakes, so use an address that drops SYNs when routable; on
	// machines without a route the dial fails at once, which is also fine.
	c := newClient(t, ClientConfig{ConnectTimeout: 200 * time.Millisecond})
	start := time.Now()
	if err := c.Send(t.Context(), "10.255.255.1:9", "ep", nil, nil); err == nil {
		t.Fatal("send to unroutable address succeeded")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("connect timeout took %v", d)
	}
}

// TestSendConnectTimeoutBlackHole dials through a dialer that never
// completes, as for a host that drops SYNs, and checks that the Send and
// every Send waiting for that dial fail once ConnectTimeout has passed.
func TestSendConnectTimeoutBlackHole(t *testing.T) {
	c := newClient(t, ClientConfig{ConnectTimeout: 150 * time.Millisecond, PoolSize: 1})
	c.dial = func(ctx context.Context, _, _ string) (net.Conn, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	start := time.Now()
	errc := make(chan error, 3)
	for range 3 {
		go func() { errc <- c.Send(t.Context(), "192.0.2.1:9", "ep", nil, nil) }()
	}
	for range 3 {
		if err := <-errc; !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want DeadlineExceeded", err)
		}
	}
	if d := time.Since(start); d < 150*time.Millisecond || d > time.Second {
		t.Fatalf("sends failed after %v, want about 150ms", d)
	}
}

func TestSendContextCancel(t *testing.T) {
	s, entered, _ := blockingServer(t)
	c := newClient(t, ClientConfig{})
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- c.Send(ctx, s.Addr(), "ep", nil, nil) }()
	<-entered
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Send did not return after cancel")
	}
	if err := c.Send(ctx, s.Addr(), "ep", nil, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("send with a cancelled ctx: err = %v", err)
	}
}

func TestSendAckTimeout(t *testing.T) {
	s, _, _ := blockingServer(t)
	c := newClient(t, ClientConfig{AckTimeout: 100 * time.Millisecond})
	start := time.Now()
	if err := c.Send(t.Context(), s.Addr(), "ep", nil, nil); !errors.Is(err, ErrAckTimeout) {
		t.Fatalf("err = %v, want ErrAckTimeout", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("ack timeout took %v", d)
	}
}

func TestClientClose(t *testing.T) {
	s, entered, _ := blockingServer(t)
	c := NewClient(ClientConfig{})
	errc := make(chan error, 1)
	go func() { errc <- c.Send(t.Context(), s.Addr(), "ep", nil, nil) }()
	<-entered
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("pending send: err = %v, want ErrClosed", err)
	}
	if err := c.Send(t.Context(), s.Addr(), "ep", nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("send after Close: err = %v, want ErrClosed", err)
	}
	c.Close()
}
