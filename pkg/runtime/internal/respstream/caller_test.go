package respstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/codec"
)

// The caller's end, tested against a fake worker (frame by frame) and
// against the worker's end (Pool).

// newTestStreamServer runs a response stream server on loopback until the
// test ends.
func newTestStreamServer(t *testing.T, cfg ServerConfig) *Server {
	t.Helper()
	cfg.Addr, cfg.AdvertiseHost = "127.0.0.1:0", "127.0.0.1"
	if cfg.MaxMessageSize == 0 {
		cfg.MaxMessageSize = 1 << 20
	}
	s, err := Listen(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(t.Context()) }()
	t.Cleanup(func() {
		s.Close()
		<-done
	})
	return s
}

// fakeWorker drives the worker's end of a shared connection frame by
// frame.
type fakeWorker struct {
	t      *testing.T
	conn   net.Conn
	r      *bufio.Reader
	window int64
}

func dialFake(t *testing.T, s *Server) *fakeWorker {
	t.Helper()
	conn, window, err := dialShared(t.Context(), muxKey{s.advertise, s.serverID}, 5*time.Second)
	if err != nil {
		t.Fatalf("dialShared: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return &fakeWorker{t: t, conn: conn, r: bufio.NewReader(conn), window: window}
}

func (f *fakeWorker) send(id uint64, m codec.Message) {
	f.t.Helper()
	if _, err := f.conn.Write(codec.AppendStreamMessage(nil, id, m)); err != nil {
		f.t.Fatalf("fake worker write: %v", err)
	}
}

// open opens p's stream and reads the caller's ack.
func (f *fakeWorker) open(p *Pending) {
	f.t.Helper()
	f.sendOpening(p)
	f.expect(p.id, `"ack"`)
}

func (f *fakeWorker) sendOpening(p *Pending) {
	hs, _ := json.Marshal(handshake{Subject: p.subject, StreamType: StreamTypeResponse})
	f.send(p.id, codec.Message{Header: hs})
}

func (f *fakeWorker) item(id uint64, v string) {
	f.send(id, dataFrame(v))
}

// read returns the next frame from the caller, or ok false if none comes
// within d.
func (f *fakeWorker) read(d time.Duration) (id uint64, m codec.Message, ok bool) {
	f.t.Helper()
	_ = f.conn.SetReadDeadline(time.Now().Add(d))
	id, m, err := codec.ReadStreamMessage(f.r, 0)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return 0, codec.Message{}, false
	}
	if err != nil {
		f.t.Fatalf("fake worker read: %v", err)
	}
	return id, m, true
}

func (f *fakeWorker) expect(id uint64, header string) {
	f.t.Helper()
	gotID, m, ok := f.read(5 * time.Second)
	if !ok || gotID != id || string(m.Header) != header {
		f.t.Fatalf("caller sent stream %d %q (arrived %v), want stream %d %q", gotID, m.Header, ok, id, header)
	}
}

func (f *fakeWorker) expectNothing() {
	f.t.Helper()
	if id, m, ok := f.read(100 * time.Millisecond); ok {
		f.t.Fatalf("caller sent stream %d %q, want nothing", id, m.Header)
	}
}

// testInstance is the instance the tests' calls go to.
var testInstance = Instance{Endpoint: "ns/c/generate", ID: 1}

// call registers a stream, lets open be done, and reads it like a call.
type testCall struct {
	p     *Pending
	rc    *testRequest
	mu    sync.Mutex
	st    Stream
	items []string
	done  chan error
}

func startCall(t *testing.T, s *Server, emit func(c *testCall, item []byte) error) *testCall {
	t.Helper()
	p, err := s.Register(testInstance)
	if err != nil {
		t.Fatal(err)
	}
	c := &testCall{p: p, rc: newTestRequest(t), done: make(chan error, 1)}
	go func() {
		defer s.Release(p)
		var st Stream
		select {
		case st = <-p.Opened():
		case <-time.After(5 * time.Second):
			c.done <- errors.New("the stream was not opened within 5s")
			return
		}
		c.mu.Lock()
		c.st = st
		c.mu.Unlock()
		c.done <- readCall(c.rc, st, func(item []byte) error {
			c.mu.Lock()
			c.items = append(c.items, string(item))
			c.mu.Unlock()
			if emit != nil {
				return emit(c, item)
			}
			return nil
		})
	}()
	return c
}

// stream returns the stream the call reads (once opened).
func (c *testCall) stream() Stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st
}

// Data frames as the runtime writes them, in the one shape readCall
// decodes.
var (
	dataPrefix    = []byte(`{"data":{"data":`)
	dataSuffix    = []byte(`},"complete_final":false}`)
	completeFinal = codec.Message{Data: []byte(`{"complete_final":true}`)}
)

func dataFrame(v string) codec.Message {
	return codec.Message{Data: append(append(append([]byte(nil), dataPrefix...), v...), dataSuffix...)}
}

// Errors of readCall: the worker's error prologue, a prologue of no
// known shape.
var (
	errPrologue    = errors.New("error prologue")
	errBadPrologue = errors.New("bad prologue")
)

// readCall reads st as the runtime's call does (readStream), with the
// transport's view of the frames: nil after complete_final, errPrologue
// after an error prologue, Next's error otherwise; emit gets each data
// item, and an error from it kills the stream. Like the call, it closes
// the stream as ended when the worker ended it.
func readCall(c Call, st Stream, emit func([]byte) error) error {
	ended := false
	defer func() { st.Close(ended) }()
	first, err := st.Next(c)
	if err != nil {
		ended = errors.Is(err, ErrReset)
		return err
	}
	switch {
	case bytes.Equal(first.Header, proOK.Header):
	case bytes.HasPrefix(first.Header, []byte(`{"error":"`)):
		ended = true
		return errPrologue
	default:
		return errBadPrologue
	}
	for {
		m, err := st.Next(c)
		if err != nil {
			ended = errors.Is(err, ErrReset)
			return err
		}
		if len(m.Data) == 0 {
			continue
		}
		if bytes.Equal(m.Data, completeFinal.Data) {
			ended = true
			return nil
		}
		item := bytes.TrimSuffix(bytes.TrimPrefix(m.Data, dataPrefix), dataSuffix)
		if err := emit(item); err != nil {
			st.Kill()
			return err
		}
	}
}

func (c *testCall) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-c.done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not end within 10s")
		return nil
	}
}

func (c *testCall) got() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.items, ",")
}

// The ways a stream on a shared connection ends, as the caller's reader
// sees them (the runtime's readStream maps them to its errors).
func TestSharedStreamEnds(t *testing.T) {
	is := func(want ...error) func(t *testing.T, err error) {
		return func(t *testing.T, err error) {
			for _, w := range want {
				if errors.Is(err, w) {
					return
				}
			}
			t.Fatalf("call = %#v, want one of %v", err, want)
		}
	}
	connEnded := is(io.EOF, net.ErrClosed)
	failed := func(t *testing.T, err error) {
		if err == nil || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, ErrReset) {
			t.Fatalf("call = %#v, want the connection's failure", err)
		}
	}
	tests := []struct {
		name      string
		stopAtOne bool
		frames    func(f *fakeWorker, id uint64)
		wantItems string
		check     func(t *testing.T, err error)
		wantKill  bool
	}{
		{"complete", false, func(f *fakeWorker, id uint64) {
			f.send(id, proOK)
			f.item(id, "1")
			f.send(id, completeFinal)
			f.send(id, codec.Message{Header: ctrlSentinel})
		}, "1", func(t *testing.T, err error) {
			if err != nil {
				t.Fatalf("call = %v, want nil", err)
			}
		}, false},
		{"error prologue", false, func(f *fakeWorker, id uint64) {
			f.send(id, codec.Message{Header: []byte(`{"error":"Backend.EngineShutdown: gone","error_detail":{"error_type":"Backend.EngineShutdown","message":"gone"}}`)})
		}, "", is(errPrologue), false},
		{"reset is a classic connection's end", false, func(f *fakeWorker, id uint64) {
			f.send(id, proOK)
			f.item(id, "1")
			f.item(id, "2")
			f.send(id, codec.Message{Header: ctrlReset})
		}, "1,2", is(ErrReset), false},
		{"reset after the caller's stop is a clean end", true, func(f *fakeWorker, id uint64) {
			f.send(id, proOK)
			f.item(id, "1")
			f.expect(id, `"stop"`)
			f.send(id, codec.Message{Header: ctrlReset})
		}, "1", is(ErrReset), false},
		{"connection ends after frames: they come first", false, func(f *fakeWorker, id uint64) {
			f.send(id, proOK)
			f.item(id, "1")
			f.item(id, "2")
			f.conn.Close()
		}, "1,2", connEnded, false},
		{"bad frame fails the connection", false, func(f *fakeWorker, id uint64) {
			f.send(id, proOK)
			frame := codec.AppendStreamMessage(nil, id, codec.Message{Data: []byte(`{"complete_final":true}`)})
			frame[len(frame)-1] ^= 1 // checksum mismatch
			_, _ = f.conn.Write(frame)
		}, "", failed, false},
		{"bad prologue", false, func(f *fakeWorker, id uint64) {
			f.send(id, codec.Message{Header: []byte(`nope`)})
		}, "", is(errBadPrologue), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestStreamServer(t, ServerConfig{})
			f := dialFake(t, s)
			c := startCall(t, s, func(c *testCall, item []byte) error {
				if tc.stopAtOne && string(item) == "1" {
					c.stream().Stop() // the runtime forwards its Context's stop
				}
				return nil
			})
			f.open(c.p)
			tc.frames(f, c.p.id)
			err := c.wait(t)
			tc.check(t, err)
			if got := c.got(); got != tc.wantItems {
				t.Fatalf("items %q, want %q", got, tc.wantItems)
			}
			if strings.Contains(tc.name, "connection") {
				return
			}
			if tc.wantKill {
				f.expect(c.p.id, `"kill"`)
			} else {
				f.expectNothing()
			}
		})
	}
}

// A worker that ignores its credit overruns the stream's window: the
// caller fails that stream (with errWindowOverrun, which the call reports
// as Disconnected, caused by the overrun) and kills
// it, instead of queueing without bound.
func TestSharedStreamOverrunIsKilled(t *testing.T) {
	s := newTestStreamServer(t, ServerConfig{Window: 1024, MaxMessageSize: 4096})
	f := dialFake(t, s)
	release := make(chan struct{})
	c := startCall(t, s, func(_ *testCall, item []byte) error {
		if string(item) == "0" {
			<-release
		}
		return nil
	})
	f.open(c.p)
	f.send(c.p.id, proOK)
	for i := range 200 {
		f.item(c.p.id, fmt.Sprint(i))
	}
	f.expect(c.p.id, `"kill"`)
	close(release)
	if err := c.wait(t); !errors.Is(err, errWindowOverrun) || !strings.Contains(err.Error(), "overrun") {
		t.Fatalf("overrun stream = %v, want the overrun", err)
	}
}

// The caller returns credit as its consumer takes frames, in grants of at
// least half the window, never more than it took.
func TestSharedStreamGrantsCredit(t *testing.T) {
	const window = 4096
	s := newTestStreamServer(t, ServerConfig{Window: window})
	f := dialFake(t, s)
	if f.window != window {
		t.Fatalf("handshake window = %d, want %d", f.window, window)
	}
	c := startCall(t, s, nil)
	f.open(c.p)
	sent := frameCost(proOK)
	f.send(c.p.id, proOK)
	var granted int64
	for i := range 500 {
		m := dataFrame(fmt.Sprint(i))
		f.send(c.p.id, m)
		sent += frameCost(m)
		for sent-granted > window { // a worker must wait for credit here
			id, g, ok := f.read(5 * time.Second)
			var grant muxGrant
			if !ok || id != c.p.id || json.Unmarshal(g.Header, &grant) != nil {
				t.Fatalf("want a grant for stream %d, got stream %d %q (arrived %v)", c.p.id, id, g.Header, ok)
			}
			if grant.Window < window/2 {
				t.Fatalf("grant of %d bytes, want at least half the window", grant.Window)
			}
			granted += grant.Window
		}
	}
	f.send(c.p.id, completeFinal)
	if err := c.wait(t); err != nil {
		t.Fatal(err)
	}
	if granted > sent {
		t.Fatalf("granted %d bytes of %d sent", granted, sent)
	}
}

// Frames for streams the caller does not know are answered with one kill
// per stream, but the frames that end a stream are not; an opening frame
// whose id does not match the pending stream's is refused with a kill.
func TestSharedStreamUnknownIDs(t *testing.T) {
	s := newTestStreamServer(t, ServerConfig{})
	f := dialFake(t, s)
	f.item(999, "1")
	f.item(999, "2")
	f.send(998, codec.Message{Header: ctrlSentinel})
	f.send(997, codec.Message{Header: ctrlReset})
	p, err := s.Register(testInstance)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release(p)
	hs, _ := json.Marshal(handshake{Subject: p.subject, StreamType: StreamTypeResponse})
	f.send(p.id+100, codec.Message{Header: hs})
	f.expect(999, `"kill"`)
	f.expect(p.id+100, `"kill"`)
	f.expectNothing()
	select {
	case <-p.ready:
		t.Fatal("a stream was opened under the wrong id")
	default:
	}
	// The end of a stream it killed clears the id: a later frame for it
	// (a buggy worker) is answered again.
	f.send(999, codec.Message{Header: ctrlReset})
	f.item(999, "3")
	f.expect(999, `"kill"`)
}

// A pending stream that the caller released (it timed out, or its
// instance left discovery) is killed when the worker opens it after all.
func TestSharedStreamOpenedTooLateIsKilled(t *testing.T) {
	s := newTestStreamServer(t, ServerConfig{})
	f := dialFake(t, s)
	p, err := s.Register(testInstance)
	if err != nil {
		t.Fatal(err)
	}
	s.Release(p)
	f.sendOpening(p)
	f.expect(p.id, `"kill"`)
}

// A shared-connection handshake naming another server (a caller that
// restarted on the same port) is refused.
func TestSharedConnectionRefusesAnotherServer(t *testing.T) {
	s := newTestStreamServer(t, ServerConfig{})
	if _, _, err := dialShared(t.Context(), muxKey{s.advertise, "not-" + s.serverID}, 2*time.Second); err == nil {
		t.Fatal("dialShared with a wrong server id succeeded")
	}
	if n := s.SharedConns(); n != 0 {
		t.Fatalf("server holds %d shared connections, want 0", n)
	}
}

// readOnlyConn feeds fixed bytes to a reader and swallows writes.
type readOnlyConn struct {
	net.Conn
	r *bytes.Reader
}

func (c *readOnlyConn) Read(b []byte) (int, error)  { return c.r.Read(b) }
func (c *readOnlyConn) Write(b []byte) (int, error) { return len(b), nil }
func (c *readOnlyConn) SetWriteDeadline(time.Time) error {
	return nil
}
func (c *readOnlyConn) Close() error { return nil }

// FuzzSharedConnection feeds arbitrary bytes to the caller's reader of a
// shared connection, with two streams pending. It may not panic, and every
// stream it opened must end (with its frames, then an error) once the
// input ends.
func FuzzSharedConnection(f *testing.F) {
	open := func(id uint64, subject string) []byte {
		hs, _ := json.Marshal(handshake{Subject: subject, StreamType: StreamTypeResponse})
		return codec.AppendStreamMessage(nil, id, codec.Message{Header: hs})
	}
	var seq []byte
	seq = append(seq, open(1, "s1")...)
	seq = append(seq, open(2, "s2")...)
	seq = codec.AppendStreamMessage(seq, 1, proOK)
	seq = codec.AppendStreamMessage(seq, 2, dataFrame("7"))
	seq = codec.AppendStreamMessage(seq, 1, codec.Message{Header: ctrlReset})
	seq = codec.AppendStreamMessage(seq, 9, codec.Message{Header: ctrlSentinel})
	seq = codec.AppendStreamMessage(seq, 0, codec.Message{Header: []byte(`{}`)})
	f.Add(seq)
	f.Add(open(1, "s1"))
	f.Add(open(2, "s1"))
	f.Add(append(open(1, "s1"), open(1, "s1")...))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1})

	f.Fuzz(func(t *testing.T, b []byte) {
		s := &Server{
			maxSize: 1 << 16, window: 1024, orphanTimeout: time.Second,
			log:     slog.New(slog.DiscardHandler),
			pending: map[string]*Pending{}, established: map[string]*Pending{},
			tombstones: map[Instance]time.Time{}, conns: map[net.Conn]struct{}{}, shared: map[*muxConn]struct{}{},
		}
		var ps []*Pending
		for i, subject := range []string{"s1", "s2"} {
			p := &Pending{subject: subject, id: uint64(i + 1), ready: make(chan Stream, 1)}
			p.gone, p.markGone = context.WithCancel(context.Background())
			s.pending[subject] = p
			ps = append(ps, p)
		}
		mc := &muxConn{s: s, conn: &readOnlyConn{r: bytes.NewReader(b)}, streams: map[uint64]*muxStream{}, dead: map[uint64]struct{}{}}
		mc.read()
		for _, p := range ps {
			select {
			case st := <-p.ready:
				rc := &testRequest{Context: t.Context(), killed: make(chan struct{})}
				for n := 0; ; n++ {
					if _, err := st.Next(rc); err != nil {
						break
					}
					if n > len(b) {
						t.Fatal("a stream yields more frames than the input holds")
					}
				}
				st.Close(false)
			default:
			}
			p.markGone()
		}
	})
}

// blackhole forwards TCP connections to a target until freeze, after
// which the connections it carries pass nothing either way and stay
// open (a network cut whose end nobody saw); new connections pass.
type blackhole struct {
	ln     net.Listener
	target string
	done   chan struct{}
	wg     sync.WaitGroup

	mu    sync.Mutex
	gate  chan struct{} // closed: the connections under this gate are cut
	conns []net.Conn
}

func newBlackhole(t *testing.T, target string) *blackhole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackhole{ln: ln, target: target, done: make(chan struct{}), gate: make(chan struct{})}
	b.wg.Add(1)
	go b.accept()
	t.Cleanup(func() {
		close(b.done)
		ln.Close()
		b.mu.Lock()
		for _, c := range b.conns {
			c.Close()
		}
		b.mu.Unlock()
		b.wg.Wait()
	})
	return b
}

func (b *blackhole) accept() {
	defer b.wg.Done()
	for {
		in, err := b.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", b.target)
		if err != nil {
			in.Close()
			continue
		}
		b.mu.Lock()
		b.conns = append(b.conns, in, out)
		gate := b.gate
		b.mu.Unlock()
		b.wg.Add(2)
		go b.pipe(in, out, gate)
		go b.pipe(out, in, gate)
	}
}

func (b *blackhole) pipe(dst, src net.Conn, gate chan struct{}) {
	defer b.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		select {
		case <-gate:
			<-b.done // cut: swallow everything, close nothing
			return
		default:
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}

// freeze cuts the connections the blackhole carries now.
func (b *blackhole) freeze() {
	b.mu.Lock()
	close(b.gate)
	b.gate = make(chan struct{})
	b.mu.Unlock()
}

// A stream opened on a shared connection that went silent without
// failing (the caller's end closed during a network cut, its reset lost)
// is not lost: the caller never acknowledges it, the worker takes the
// connection for dead after the ack timeout, opens the stream again on a
// new connection and writes its frames again; the caller gets each frame
// once.
func TestStreamMovesOffASilentConnection(t *testing.T) {
	s := newTestStreamServer(t, ServerConfig{})
	hole := newBlackhole(t, s.ln.Addr().String())
	pool := NewPool(300*time.Millisecond, time.Minute, slog.New(slog.DiscardHandler))
	defer pool.Close()

	serveOne := func(items int) *testCall {
		t.Helper()
		c := startCall(t, s, nil)
		o, err := pool.Open(newTestRequest(t), Target{Address: hole.ln.Addr().String(), Subject: c.p.subject, ServerID: s.serverID, StreamID: c.p.id})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		frames := []codec.Message{proOK}
		for i := range items {
			frames = append(frames, dataFrame(fmt.Sprint(i)))
		}
		frames = append(frames, completeFinal, codec.Message{Header: ctrlSentinel})
		for _, m := range frames {
			if _, err := o.Write(m); err != nil {
				t.Fatalf("write: %v", err)
			}
		}
		o.Close(true)
		return c
	}
	c := serveOne(3)
	if err := c.wait(t); err != nil || c.got() != "0,1,2" {
		t.Fatalf("first stream: %q, %v", c.got(), err)
	}
	first := pool.Size()

	hole.freeze()
	start := time.Now()
	c = serveOne(5) // waits for the ack: until the connection is given up
	if err := c.wait(t); err != nil || c.got() != "0,1,2,3,4" {
		t.Fatalf("stream opened on the silent connection: %q, %v; want every item once", c.got(), err)
	}
	t.Logf("the stream moved to a new connection and completed %v after it was opened on the silent one", time.Since(start).Round(time.Millisecond))
	if first != 1 || pool.Size() != 1 {
		t.Fatalf("worker connections: %d before, %d after; want 1 (the silent one replaced)", first, pool.Size())
	}
}

// The caller acks a stream before it waits for more from the connection,
// even when what it has read ends inside the next frame (under a steady
// flow its buffer is never empty at a frame boundary).
func TestSharedStreamAckIsNotHeldBehindAPartialFrame(t *testing.T) {
	s := newTestStreamServer(t, ServerConfig{})
	f := dialFake(t, s)
	c := startCall(t, s, nil)
	hs, _ := json.Marshal(handshake{Subject: c.p.subject, StreamType: StreamTypeResponse})
	b := codec.AppendStreamMessage(nil, c.p.id, codec.Message{Header: hs})
	next := codec.AppendStreamMessage(nil, c.p.id, proOK)
	if _, err := f.conn.Write(append(b, next[:10]...)); err != nil {
		t.Fatal(err)
	}
	f.expect(c.p.id, `"ack"`)
	if _, err := f.conn.Write(next[10:]); err != nil {
		t.Fatal(err)
	}
	f.send(c.p.id, completeFinal)
	if err := c.wait(t); err != nil {
		t.Fatal(err)
	}
}

// A caller that keeps reading frames without anything to answer writes a
// frame on stream 0 about every muxKeepGoing, so that the worker can tell
// it from a dead one (the ack of a stream whose opening frame waits
// behind others may be late).
func TestCallerThatOnlyReadsSaysItKeepsGoing(t *testing.T) {
	s := newTestStreamServer(t, ServerConfig{})
	f := dialFake(t, s)
	c := startCall(t, s, nil)
	f.open(c.p)
	f.send(c.p.id, proOK)
	start := time.Now()
	for i := 0; time.Since(start) < muxKeepGoing+muxKeepGoing/2; i++ {
		f.item(c.p.id, fmt.Sprint(i))
		time.Sleep(20 * time.Millisecond)
	}
	f.item(c.p.id, "-1")
	id, m, ok := f.read(5 * time.Second)
	if !ok || id != 0 || string(m.Header) != `"ack"` {
		t.Fatalf("caller sent stream %d %q (arrived %v) while it read for %v; want a keep-going frame on stream 0", id, m.Header, ok, time.Since(start).Round(time.Millisecond))
	}
	if d := time.Since(start); d < muxKeepGoing {
		t.Fatalf("keep-going frame after %v of reading; want one per %v at most", d, muxKeepGoing)
	}
	f.send(c.p.id, completeFinal)
	if err := c.wait(t); err != nil {
		t.Fatal(err)
	}
}

// A caller answers even a lone frame that arrives just after it wrote
// something: a keep-going frame follows within muxKeepGoing.
func TestCallerAnswersALoneFrame(t *testing.T) {
	s := newTestStreamServer(t, ServerConfig{})
	f := dialFake(t, s)
	c := startCall(t, s, nil)
	f.open(c.p) // the caller just wrote its ack
	f.send(c.p.id, proOK)
	start := time.Now()
	id, m, ok := f.read(3 * muxKeepGoing)
	if !ok || id != 0 || string(m.Header) != `"ack"` {
		t.Fatalf("caller sent stream %d %q (arrived %v) after a lone frame; want a keep-going frame on stream 0", id, m.Header, ok)
	}
	if d := time.Since(start); d > muxKeepGoing+muxKeepGoing/2 {
		t.Fatalf("the lone frame was answered after %v; want within about %v", d, muxKeepGoing)
	}
	f.expectNothing() // and nothing more while nothing arrives
	f.send(c.p.id, completeFinal)
	if err := c.wait(t); err != nil {
		t.Fatal(err)
	}
}

// A worker whose reader lags by more than a second (a process too busy to
// schedule it) keeps its shared connection: the caller's control frames
// wait for it instead of failing every stream on the connection.
func TestSharedConnectionOutlastsALateReader(t *testing.T) {
	s := newTestStreamServer(t, ServerConfig{})
	f := dialFake(t, s)
	c := startCall(t, s, nil)
	f.open(c.p)
	f.send(c.p.id, proOK)
	for deadline := time.Now().Add(5 * time.Second); c.stream() == nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the call did not get its stream within 5s")
		}
	}
	// Small socket buffers on both ends, so that the caller's frames
	// fill them soon.
	_ = f.conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	s.mu.Lock()
	for mc := range s.shared {
		_ = mc.conn.(*net.TCPConn).SetWriteBuffer(4 << 10)
	}
	s.mu.Unlock()
	const stops = 20000 // 760 kB of frames: far more than the buffers hold
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for range stops {
			c.stream().Stop()
		}
	}()
	// The fault: the worker reads nothing for longer than a second.
	time.Sleep(1500 * time.Millisecond)
	for n := 0; n < stops; {
		id, m, ok := f.read(5 * time.Second)
		switch {
		case ok && id == 0:
			continue // keep-going frames: the caller reads
		case !ok || id != c.p.id || string(m.Header) != `"stop"`:
			t.Fatalf("frame %d: stream %d %q (arrived %v), want stream %d's stop", n, id, m.Header, ok, c.p.id)
		}
		n++
	}
	<-sent
	f.item(c.p.id, "1")
	f.send(c.p.id, completeFinal)
	if err := c.wait(t); err != nil || c.got() != "1" {
		t.Fatalf("call = %v with items %q, want the item and a clean end", err, c.got())
	}
}
