//go:build linux

package tcpinfo

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pair returns both ends of a loopback TCP connection; with a small
// receive buffer the kernel probes a closed window with a byte of data
// (a retransmission), with the default one with bare probes.
func pair(t *testing.T, smallBuffer bool) (sender, receiver *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	r := <-accepted
	if r == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); r.Close() })
	if smallBuffer {
		if err := r.(*net.TCPConn).SetReadBuffer(4096); err != nil {
			t.Fatal(err)
		}
	}
	return c.(*net.TCPConn), r.(*net.TCPConn)
}

// fill writes to c until its peer's window and its own send buffer are
// full.
func fill(t *testing.T, c *net.TCPConn) {
	t.Helper()
	buf := make([]byte, 64<<10)
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	for {
		if _, err := c.Write(buf); err != nil {
			break
		}
	}
}

// deafen makes c's kernel drop every segment that reaches it (a socket
// filter that accepts nothing), as if its host had vanished.
func deafen(t *testing.T, c *net.TCPConn) {
	t.Helper()
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	drop := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: 0}}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptSockFprog(int(fd), unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &unix.SockFprog{Len: 1, Filter: &drop[0]})
	}); err != nil || serr != nil {
		t.Skipf("cannot attach a socket filter here: %v %v", err, serr)
	}
}

// A peer whose process does not read (its window closed) is slow, not
// gone: its kernel answers every window probe, so nothing is owed however
// long the window stays closed. The kernel probes at doubling intervals,
// so the time since its last acknowledgement alone would grow past any
// bound (5 s after about 13 s).
func TestClosedWindowIsNotSilence(t *testing.T) {
	t.Parallel()
	forBothProbes(t, func(t *testing.T, small bool) {
		sender, _ := pair(t, small)
		fill(t, sender)
		end := time.Now().Add(4 * time.Second)
		for time.Now().Before(end) {
			if silence, owed := PeerAckSilence(sender); owed {
				t.Fatalf("a peer that answers its window probes is reported silent for %v", silence)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// forBothProbes runs f in parallel for both kinds of window probe.
func forBothProbes(t *testing.T, f func(t *testing.T, smallBuffer bool)) {
	for _, small := range []bool{false, true} {
		name := "bare probes"
		if small {
			name = "data probes"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t, small)
		})
	}
}

// A peer host that vanished while its window was closed answers no
// probe: it is reported silent, for as long as it last acknowledged.
func TestVanishedPeerBehindClosedWindow(t *testing.T) {
	t.Parallel()
	forBothProbes(t, func(t *testing.T, small bool) {
		sender, receiver := pair(t, small)
		fill(t, sender)
		deafen(t, receiver)
		waitSilent(t, sender, time.Second, 8*time.Second)
	})
}

// A peer host that vanished with data in flight to it acknowledges none
// of it: it is reported silent.
func TestVanishedPeerWithDataInFlight(t *testing.T) {
	t.Parallel()
	sender, receiver := pair(t, false)
	deafen(t, receiver)
	if _, err := sender.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	waitSilent(t, sender, time.Second, 5*time.Second)
}

// waitSilent waits up to within for c's peer to be reported silent for
// at least atLeast.
func waitSilent(t *testing.T, c net.Conn, atLeast, within time.Duration) {
	t.Helper()
	end := time.Now().Add(within)
	var silence time.Duration
	var owed bool
	for time.Now().Before(end) {
		if silence, owed = PeerAckSilence(c); owed && silence >= atLeast {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("after %v: owed=%v, silent for %v; want a silence of at least %v", within, owed, silence, atLeast)
}

// What each reading of TCP_INFO means.
func TestSilenceReading(t *testing.T) {
	for _, c := range []struct {
		name string
		info unix.TCPInfo
		owed bool
	}{
		{"idle", unix.TCPInfo{Last_ack_recv: 60000}, false},
		{"data sent since the last answer", unix.TCPInfo{Unacked: 3, Last_ack_recv: 7000, Last_data_sent: 6500}, true},
		{"data in flight, answered since", unix.TCPInfo{Unacked: 3, Last_ack_recv: 7000, Last_data_sent: 7000}, false},
		{"closed window, probes answered", unix.TCPInfo{Notsent_bytes: 100, Probes: 0, Last_ack_recv: 7000, Last_data_sent: 30000}, false},
		{"closed window, a probe's answer on its way", unix.TCPInfo{Notsent_bytes: 100, Probes: 1, Last_ack_recv: 7000, Last_data_sent: 30000}, false},
		{"closed window, probes unanswered", unix.TCPInfo{Notsent_bytes: 100, Probes: 2, Last_ack_recv: 7000, Last_data_sent: 30000}, true},
		{"closed window, a data probe answered", unix.TCPInfo{Unacked: 1, Notsent_bytes: 100, Last_ack_recv: 7000, Last_data_sent: 7000}, false},
		{"closed window, a data probe unanswered", unix.TCPInfo{Unacked: 1, Notsent_bytes: 100, Last_ack_recv: 7000, Last_data_sent: 1000}, true},
	} {
		silence, owed := silence(&c.info)
		if owed != c.owed || (owed && silence != 7*time.Second) {
			t.Errorf("%s: got (%v, %v), want owed=%v", c.name, silence, owed, c.owed)
		}
	}
}
