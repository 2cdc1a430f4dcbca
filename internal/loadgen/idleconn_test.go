package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
)

// dropConn is a server connection that is closed, the bytes unread by
// the HTTP server, when a request arrives on it and drop says so.
// answered is set once the server has answered a request on it and
// waits for the next (http.StateIdle).
type dropConn struct {
	net.Conn
	answered atomic.Bool
	drop     func(answered bool) bool
}

func (c *dropConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.drop(c.answered.Load()) {
		c.Conn.Close()
		return 0, net.ErrClosed
	}
	return n, err
}

type dropListener struct {
	net.Listener
	drop func(answered bool) bool
}

func (l dropListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &dropConn{Conn: c, drop: l.drop}, nil
}

// newDropServer serves h on 127.0.0.1 and closes a connection, before
// the HTTP server reads a byte of the request, when a request arrives on
// it and drop (given whether the connection answered one before) says
// so: the server's side of a keep-alive timeout that ends just as the
// client sends its next request on the pooled connection.
func newDropServer(t *testing.T, h http.Handler, drop func(answered bool) bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = dropListener{Listener: srv.Listener, drop: drop}
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateIdle {
			c.(*dropConn).answered.Store(true)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// counted wraps h and counts the requests it is given.
func counted(h http.Handler, n *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h.ServeHTTP(w, r)
	})
}

// A server that closes kept-alive connections makes requests on pooled
// connections fail before it reads them ("server closed idle
// connection", EOF, a reset): each is sent again, once, on a new
// connection, and counted; none fails, and the server gets every request
// exactly once.
func TestRunRetriesRequestsOnClosedIdleConns(t *testing.T) {
	baseline := BaselineHandler(BaselineOptions{})
	tests := []struct {
		name string
		// start returns the server's URL; handled counts the requests
		// its handler got.
		start func(t *testing.T, handled *atomic.Int64) string
		// mustRetry: every run has requests on closed pooled
		// connections. The other server races the client for them.
		mustRetry bool
	}{
		{
			name: "closed when the next request arrives",
			start: func(t *testing.T, handled *atomic.Int64) string {
				return newDropServer(t, counted(baseline, handled), func(answered bool) bool { return answered }).URL
			},
			mustRetry: true,
		},
		{
			name: "closed as soon as idle",
			start: func(t *testing.T, handled *atomic.Int64) string {
				srv := httptest.NewUnstartedServer(counted(baseline, handled))
				srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
					if s == http.StateIdle {
						c.Close() // no "Connection: close": the client pools it
					}
				}
				srv.Start()
				t.Cleanup(srv.Close)
				return srv.URL
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var handled atomic.Int64
			cfg := testConfig(tt.start(t, &handled))
			cfg.Requests = 100
			rep := runFor(t, cfg)
			if rep.Failed != 0 || rep.Completed != cfg.Requests {
				t.Fatalf("completed %d, failed %d %v (%q); want all %d completed",
					rep.Completed, rep.Failed, rep.Errors, rep.ErrorSamples, cfg.Requests)
			}
			if tt.mustRetry && rep.RetriedIdleConn == 0 {
				t.Errorf("retried %d, want the requests sent on closed pooled connections counted", rep.RetriedIdleConn)
			}
			if got, want := handled.Load(), int64(cfg.Warmup+cfg.Requests); got != want {
				t.Errorf("server handled %d requests, want %d: each once", got, want)
			}
			t.Logf("retried (idle conn closed): %d of %d", rep.RetriedIdleConn, cfg.Requests)
		})
	}
}

// A retry goes on a new connection and is the only one: when the server
// closes that too, the request fails.
func TestRunRetriesOnce(t *testing.T) {
	var served atomic.Bool
	baseline := BaselineHandler(BaselineOptions{})
	srv := newDropServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		baseline.ServeHTTP(w, r)
		served.Store(true) // before the response's end reaches the client
	}), func(bool) bool { return served.Load() })
	cfg := testConfig(srv.URL)
	cfg.Concurrency, cfg.Warmup, cfg.Requests = 1, 0, 4
	rep := runFor(t, cfg)
	// The second request goes on the first one's pooled connection and
	// is retried on a new one; that and every later connection are
	// closed at the request.
	if rep.Completed != 1 || rep.Failed != 3 || rep.Errors[KindTransport] != 3 || rep.RetriedIdleConn != 1 {
		t.Fatalf("completed %d, failed %d %v, retried %d; want 1 completed, 3 failed (transport), 1 retried",
			rep.Completed, rep.Failed, rep.Errors, rep.RetriedIdleConn)
	}
}

type connRequestsKey struct{}

// A request the server received is never sent again: not when the
// connection breaks after any byte of the answer on a reused connection,
// nor when the server closes a new connection without answering.
func TestRunDoesNotRetryReceivedRequests(t *testing.T) {
	baseline := BaselineHandler(BaselineOptions{})
	tests := []struct {
		name string
		// serve answers the nth request (from 1) on its connection.
		serve func(w http.ResponseWriter, r *http.Request, nth int64)
		// allFail: every request fails, not only those on reused
		// connections.
		allFail bool
	}{
		{
			name: "reused connection closed after the status line",
			serve: func(w http.ResponseWriter, r *http.Request, nth int64) {
				if nth == 1 {
					baseline.ServeHTTP(w, r)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				_ = http.NewResponseController(w).Flush()
				panic(http.ErrAbortHandler)
			},
		},
		{
			name: "reused connection closed mid-stream",
			serve: func(w http.ResponseWriter, r *http.Request, nth int64) {
				if nth == 1 {
					baseline.ServeHTTP(w, r)
					return
				}
				streamStart(w, 3)
				panic(http.ErrAbortHandler)
			},
		},
		{
			name: "new connection closed without an answer",
			serve: func(http.ResponseWriter, *http.Request, int64) {
				panic(http.ErrAbortHandler)
			},
			allFail: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var handled atomic.Int64
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				handled.Add(1)
				tt.serve(w, r, r.Context().Value(connRequestsKey{}).(*atomic.Int64).Add(1))
			}))
			srv.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
				return context.WithValue(ctx, connRequestsKey{}, new(atomic.Int64))
			}
			srv.Start()
			defer srv.Close()
			cfg := testConfig(srv.URL)
			rep := runFor(t, cfg)
			if rep.RetriedIdleConn != 0 {
				t.Errorf("retried %d, want 0", rep.RetriedIdleConn)
			}
			if rep.Failed == 0 || rep.Errors[KindTransport] != rep.Failed || rep.Completed+rep.Failed != cfg.Requests {
				t.Errorf("completed %d, failed %d %v; want the broken requests failed (transport), the others completed",
					rep.Completed, rep.Failed, rep.Errors)
			}
			if tt.allFail && rep.Failed != cfg.Requests {
				t.Errorf("failed %d, want all %d", rep.Failed, cfg.Requests)
			}
			if got, want := handled.Load(), int64(cfg.Warmup+cfg.Requests); got != want {
				t.Errorf("server handled %d requests, want %d: none sent twice", got, want)
			}
		})
	}
}

func TestNeverReceived(t *testing.T) {
	post := func(err error) error {
		return &url.Error{Op: "Post", URL: "http://127.0.0.1:1/v1/chat/completions", Err: err}
	}
	sys := func(op string, errno syscall.Errno) error {
		return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, errno)}
	}
	tests := []struct {
		err  error
		want bool
	}{
		{post(errors.New("http: server closed idle connection")), true},
		{post(io.EOF), true},
		{post(io.ErrUnexpectedEOF), true},
		{post(sys("read", syscall.ECONNRESET)), true},
		{post(fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w", sys("write", syscall.EPIPE))), true},
		{post(&net.OpError{Op: "write", Net: "tcp", Err: net.ErrClosed}), true},
		{post(sys("dial", syscall.ECONNREFUSED)), false},
		{post(context.DeadlineExceeded), false},
		{post(errors.New("net/http: server response headers exceeded 1048576 bytes; aborted")), false},
		{post(errors.New("malformed HTTP response \"hello\"")), false},
	}
	for _, tt := range tests {
		if got := neverReceived(tt.err); got != tt.want {
			t.Errorf("neverReceived(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
