package frontend

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/pipeline"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
)

const detachBody = `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stream":true}`

// refuseEngine refuses every request before its first token, as an
// engine that cannot serve what it was asked.
type refuseEngine struct{ textEngine }

func (e *refuseEngine) Generate(context.Context, *backend.Request, func(*backend.Output) error) error {
	return runtime.NewError(backend.TypeInvalidArgument, "this engine takes no requests")
}

// postOn sends a request with client and reports whether it went out on
// a connection used before.
func postOn(t *testing.T, client *http.Client, url, body string, header ...string) (response, bool) {
	t.Helper()
	reused := false
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return response{resp.StatusCode, resp.Header, b}, reused
}

// A streamed answer leaves net/http's handler (detach.go): it must still
// look like any HTTP/1.1 response to a client, and its connection must
// serve the client's next requests, streamed or not.
func TestStreamsKeepTheirConnectionAlive(t *testing.T) {
	s := newStack(t, Config{DetachStreamsAt: 1}, pipeline.Config{})
	s.addWorker(t, "demo", helloEngine(t, time.Millisecond))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	for i := range 3 {
		r, reused := postOn(t, client, s.url+"/v1/chat/completions", detachBody)
		chunks, done := sseData(t, r.body)
		if r.status != 200 || !done || len(chunks) == 0 {
			t.Fatalf("stream %d: status %d, %d chunks, [DONE] %v: %s", i, r.status, len(chunks), done, r.body)
		}
		if ct := r.header.Get("Content-Type"); ct != "text/event-stream" || r.header.Get("x-request-id") == "" || r.header.Get("Date") == "" {
			t.Errorf("stream %d headers: %v", i, r.header)
		}
		if reused != (i > 0) {
			t.Errorf("stream %d: connection reused %v, want %v", i, reused, i > 0)
		}
	}
	r, reused := postOn(t, client, s.url+"/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":5}`)
	if r.status != 200 || !reused || !strings.Contains(string(r.body), `"chat.completion"`) {
		t.Errorf("unary after streams: status %d, reused %v: %s", r.status, reused, r.body)
	}
}

// An error before the first token still gets its status, headers and
// OpenAI error body, and the connection goes on.
func TestStreamRefusedBeforeItsFirstToken(t *testing.T) {
	s := newStack(t, Config{DetachStreamsAt: 1}, pipeline.Config{})
	s.addWorker(t, "demo", &refuseEngine{})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	for i := range 2 {
		r, reused := postOn(t, client, s.url+"/v1/chat/completions", detachBody)
		if r.status != http.StatusBadRequest || r.header.Get("Content-Type") != "application/json" {
			t.Fatalf("refusal %d: status %d, headers %v: %s", i, r.status, r.header, r.body)
		}
		if e := errorInfo(t, r.body); !strings.Contains(e.Message, "this engine takes no requests") || e.Type != "invalid_request_error" {
			t.Errorf("refusal %d: error %+v", i, e)
		}
		if reused != (i > 0) {
			t.Errorf("refusal %d: connection reused %v, want %v", i, reused, i > 0)
		}
	}
}

// rawRequest is an HTTP/1.1 request as bytes.
func rawRequest(method, path, body string, header ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: frontend\r\n", method, path)
	for _, h := range header {
		b.WriteString(h + "\r\n")
	}
	if body != "" {
		fmt.Fprintf(&b, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n" + body)
	return b.String()
}

// A client that sends its next request while an answer streams (HTTP/1.1
// pipelining) gets both answers, in order.
func TestPipelinedRequestAfterAStream(t *testing.T) {
	s := newStack(t, Config{DetachStreamsAt: 1}, pipeline.Config{})
	s.addWorker(t, "demo", helloEngine(t, 5*time.Millisecond))
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, rawRequest("POST", "/v1/chat/completions", detachBody)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	first, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The stream has started: now the next request.
	if _, err := io.WriteString(conn, rawRequest("GET", "/v1/models", "")); err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(first.Body)
	if _, done := sseData(t, body); err != nil || first.StatusCode != 200 || !done {
		t.Fatalf("stream: status %d, err %v: %s", first.StatusCode, err, body)
	}
	second, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the pipelined request: %v", err)
	}
	body, _ = io.ReadAll(second.Body)
	if second.StatusCode != 200 || !strings.Contains(string(body), `"demo"`) {
		t.Errorf("the pipelined request: status %d: %s", second.StatusCode, body)
	}
}

// Connection: close is honoured after a stream.
func TestConnectionCloseAfterAStream(t *testing.T) {
	s := newStack(t, Config{DetachStreamsAt: 1}, pipeline.Config{})
	s.addWorker(t, "demo", helloEngine(t, 0))
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, rawRequest("POST", "/v1/chat/completions", detachBody, "Connection: close")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if _, done := sseData(t, body); !done || !resp.Close {
		t.Fatalf("stream: [DONE] %v, Connection: close %v: %s", done, resp.Close, body)
	}
	if n, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after the answer: read %q, %v; want the connection closed", n, err)
	}
}

// A drain that runs out ends the streams that took their connections
// over too, so Run returns.
func TestDrainTimeoutEndsStreams(t *testing.T) {
	mem := discovery.NewMemSpace()
	svc, err := New(Config{ShutdownGrace: -1, DrainTimeout: 300 * time.Millisecond, DetachStreamsAt: 1}, Deps{Models: ServeRegistry(startModels(t, startRuntime(t, mem)))})
	if err != nil {
		t.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	url := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx, ln, "", "") }()
	s := &stack{mem: mem, url: url, workers: map[string]context.CancelFunc{}, done: map[string]chan error{}}
	eng := helloEngine(t, 50*time.Millisecond)
	s.addWorker(t, "demo", eng)
	defer s.stopWorker("demo")

	resp, err := http.Post(url+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"demo","messages":[{"role":"user","content":"x"}],"max_tokens":1000,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the drain timeout with a stream in flight")
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("Run returned after %v, before the drain timeout", d)
	}
	if rest, err := io.ReadAll(br); err == nil && strings.Contains(string(rest), "[DONE]") {
		t.Errorf("a stream of 1000 tokens finished within the drain: %q", tail(string(rest)))
	}
}

// Over TLS, a stream takes its HTTP/1.1 connection over as over TCP; an
// HTTP/2 stream stays on its handler. Both answer whole.
func TestStreamsOverTLS(t *testing.T) {
	dir := t.TempDir()
	certPath, keyPath := dir+"/cert.pem", dir+"/key.pem"
	pool := writeSelfSigned(t, certPath, keyPath)
	mem := discovery.NewMemSpace()
	svc, err := New(Config{ShutdownGrace: -1, DetachStreamsAt: 1}, Deps{Models: ServeRegistry(startModels(t, startRuntime(t, mem)))})
	if err != nil {
		t.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx, ln, certPath, keyPath) }()
	defer func() { cancel(); <-done }()
	h1 := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool},
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}, MaxIdleConnsPerHost: 1}}
	h2 := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	defer h1.CloseIdleConnections()
	defer h2.CloseIdleConnections()
	s := &stack{mem: mem, url: "https://" + ln.Addr().String(), workers: map[string]context.CancelFunc{}, done: map[string]chan error{}, client: h1}
	s.addWorker(t, "demo", helloEngine(t, time.Millisecond))
	defer s.stopWorker("demo")
	for _, c := range []struct {
		name   string
		client *http.Client
		proto  int
	}{{"HTTP/1.1", h1, 1}, {"HTTP/2", h2, 2}} {
		for i := range 2 {
			req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/chat/completions", strings.NewReader(detachBody))
			req.Header.Set("Content-Type", "application/json")
			resp, err := c.client.Do(req)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if _, ok := sseData(t, body); err != nil || !ok || resp.ProtoMajor != c.proto || resp.TLS == nil {
				t.Errorf("%s stream %d: proto %s, err %v: %s", c.name, i, resp.Proto, err, body)
			}
		}
	}
}

// Streams take their connections over only from Config.DetachStreamsAt
// streams in flight on: below it they stay on net/http's handler.
func TestDetachOnlyFromTheThreshold(t *testing.T) {
	s := newStack(t, Config{DetachStreamsAt: 3}, pipeline.Config{})
	s.addWorker(t, "demo", helloEngine(t, 20*time.Millisecond))
	detached := func() int {
		s.svc.detachedMu.Lock()
		defer s.svc.detachedMu.Unlock()
		return len(s.svc.detached)
	}
	var bodies []*bufio.Reader
	for i := range 4 {
		resp, err := http.Post(s.url+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":200,"stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, br)
		want := max(0, i+1-2) // the 3rd and 4th in flight take theirs over
		if got := detached(); got != want {
			t.Errorf("with %d streams in flight: %d took their connections over, want %d", i+1, got, want)
		}
	}
	for i, br := range bodies {
		if rest, err := io.ReadAll(br); err != nil || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
			t.Errorf("stream %d: err %v, tail %q", i, err, tail(string(rest)))
		}
	}
}

// streamThenShutDown runs a service of its own (so that the test can stop
// it) with cfg and a worker, starts a stream of tokens tokens, and returns
// once its first chunk came: the stack, the rest of the stream, the
// service's cancel and Run's result.
func streamThenShutDown(t *testing.T, cfg Config, tokens int) (*stack, *bufio.Reader, context.CancelFunc, chan error) {
	t.Helper()
	mem := discovery.NewMemSpace()
	cfg.ShutdownGrace = -1
	svc, err := New(cfg, Deps{Models: ServeRegistry(startModels(t, startRuntime(t, mem)))})
	if err != nil {
		t.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx, ln, "", "") }()
	s := &stack{mem: mem, url: "http://" + ln.Addr().String(), workers: map[string]context.CancelFunc{}, done: map[string]chan error{}}
	s.addWorker(t, "demo", helloEngine(t, 20*time.Millisecond))
	resp, err := http.Post(s.url+"/v1/chat/completions", "application/json",
		strings.NewReader(fmt.Sprintf(`{"model":"demo","messages":[{"role":"user","content":"x"}],"max_tokens":%d,"stream":true}`, tokens)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	return s, br, cancel, done
}

// writeLog is a listener whose connections record each Write they are
// given: what a client's bytes left the server in, one system call each.
type writeLog struct {
	net.Listener
	mu     sync.Mutex
	writes [][]byte
}

func (l *writeLog) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &loggedConn{Conn: c, log: l}, nil
}

func (l *writeLog) all() [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.writes)
}

type loggedConn struct {
	net.Conn
	log *writeLog
}

func (c *loggedConn) Write(p []byte) (int, error) {
	c.log.mu.Lock()
	c.log.writes = append(c.log.writes, slices.Clone(p))
	c.log.mu.Unlock()
	return c.Conn.Write(p)
}

// A stream's last events and the end of its body (HTTP/1.1's last chunk)
// leave in one write, not one each, on net/http's handler and on a
// connection the stream took over alike.
func TestStreamEndsInOneWrite(t *testing.T) {
	for _, tc := range []struct {
		name     string
		detachAt int
	}{{"handler", -1}, {"taken over", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			var log *writeLog
			s := newStackOn(t, Config{DetachStreamsAt: tc.detachAt}, pipeline.Config{}, Deps{}, func(ln net.Listener) net.Listener {
				log = &writeLog{Listener: ln}
				return log
			})
			s.addWorker(t, "demo", helloEngine(t, time.Millisecond))
			client := &http.Client{Transport: &http.Transport{}}
			defer client.CloseIdleConnections()
			r, _ := postOn(t, client, s.url+"/v1/chat/completions", detachBody)
			if _, done := sseData(t, r.body); r.status != 200 || !done {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			writes := log.all()
			if len(writes) < 2 {
				t.Fatalf("the answer left in %d writes, want the headers and tokens before its end", len(writes))
			}
			last := string(writes[len(writes)-1])
			if !strings.HasSuffix(last, openai.SSEDone+"\r\n0\r\n\r\n") {
				t.Errorf("last write %q, want [DONE] and the last chunk together", last)
			}
		})
	}
}
