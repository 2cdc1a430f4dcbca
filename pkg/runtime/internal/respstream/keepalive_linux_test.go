package respstream

import (
	"encoding/json"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/codec"
)

// A shared response connection the worker dials probes the caller's host
// once idle (it notices a caller host that went silent while nothing was
// written; while it writes, the caller's answers tell, see
// TestSilentCallerIsGivenUp), as the caller's end does. The socket
// options are read back from the kernel.
func TestSharedConnectionKeepAlive(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		if _, err := codec.ReadMessage(conn, 1<<20); err != nil {
			return
		}
		accept, _ := json.Marshal(muxAccept{StreamType: streamTypeResponseMux, Version: MuxVersion, Window: 1 << 20})
		_ = codec.WriteMessage(conn, codec.Message{Header: accept})
		_, _ = codec.ReadMessage(conn, 1<<20) // until the worker closes
	}()
	worker, _, err := dialShared(t.Context(), muxKey{ln.Addr().String(), "caller"}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	raw, err := worker.(*net.TCPConn).SyscallConn()
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
