package respstream

import (
	"encoding/json"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/codec"
)

// A response stream the caller accepts probes its worker's host once the
// stream is idle: a worker whose host went silent (partitioned, powered
// off) ends the stream within seconds, where Go's default keep-alive
// would take about 2.5 minutes. The socket options are read back from
// the kernel.
func TestResponseStreamKeepAlive(t *testing.T) {
	s := newTestStreamServer(t, ServerConfig{})
	p, err := s.Register(testInstance)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release(p)
	worker, err := net.Dial("tcp", s.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	hs, _ := json.Marshal(handshake{Subject: p.subject, StreamType: StreamTypeResponse})
	if err := codec.WriteMessage(worker, codec.Message{Header: hs}); err != nil {
		t.Fatal(err)
	}
	var conn net.Conn
	select {
	case st := <-p.Opened():
		conn = st.(*connStream).conn
	case <-time.After(5 * time.Second):
		t.Fatal("the call-home connection was not handed over within 5s")
	}
	defer conn.Close()

	checkKeepAlive(t, conn)
	if d := streamKeepAlive.Idle + time.Duration(streamKeepAlive.Count)*streamKeepAlive.Interval; d > 10*time.Second {
		t.Errorf("a silent worker host is noticed after %v, want at most 10s (the default lease TTL)", d)
	}
}

// A shared response connection keeps the same keep-alive on both ends:
// the caller's (it only reads, and must notice a silent worker host) and
// the worker's (it notices a caller host that went silent while nothing
// was written; while it writes, the caller's answers tell, see
// TestSilentCallerIsGivenUp).
func TestSharedConnectionKeepAlive(t *testing.T) {
	s := newTestStreamServer(t, ServerConfig{})
	worker, _, err := dialShared(t.Context(), muxKey{s.advertise, s.serverID}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	var caller net.Conn
	deadline := time.Now().Add(5 * time.Second)
	for caller == nil && time.Now().Before(deadline) {
		s.mu.Lock()
		for mc := range s.shared {
			caller = mc.conn
		}
		s.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	if caller == nil {
		t.Fatal("the caller holds no shared connection")
	}
	t.Run("caller", func(t *testing.T) { checkKeepAlive(t, caller) })
	t.Run("worker", func(t *testing.T) { checkKeepAlive(t, worker) })
}

// checkKeepAlive reads conn's keep-alive options back from the kernel and
// compares them with streamKeepAlive.
func checkKeepAlive(t *testing.T, conn net.Conn) {
	t.Helper()
	raw, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	var sockErr error
	err = raw.Control(func(fd uintptr) {
		for _, o := range []struct {
			name       string
			level, opt int
		}{
			{"SO_KEEPALIVE", syscall.SOL_SOCKET, syscall.SO_KEEPALIVE},
			{"TCP_KEEPIDLE", syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE},
			{"TCP_KEEPINTVL", syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL},
			{"TCP_KEEPCNT", syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT},
		} {
			v, err := syscall.GetsockoptInt(int(fd), o.level, o.opt)
			if err != nil {
				sockErr = err
				return
			}
			got[o.name] = v
		}
	})
	if err != nil || sockErr != nil {
		t.Fatalf("getsockopt: %v, %v", err, sockErr)
	}
	want := map[string]int{"SO_KEEPALIVE": 1, "TCP_KEEPIDLE": 2, "TCP_KEEPINTVL": 1, "TCP_KEEPCNT": 3}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
}
