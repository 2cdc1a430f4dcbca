//go:build linux

package tcpinfo

import (
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// unansweredProbes is how many zero-window probes in a row may go
// unanswered before the peer counts as silent. A live peer answers each
// one within a round trip (the kernel then counts from zero again); the
// count may read 1 while an answer is on its way.
const unansweredProbes = 2

// PeerAckSilence reports whether the peer's kernel owes c an answer and,
// if so, how long ago it last acknowledged anything (TCP_INFO). A live
// host answers everything it is sent, however slow its process; a
// vanished host answers nothing. It owes an answer when c sent data
// after the last acknowledgement (new data, or a retransmission), or when
// the window probes c sends while the peer's receive window is closed go
// unanswered.
//
// Data waiting for a closed window is not silence by itself: the kernel
// probes the window at doubling intervals (past 5 s after about 13 s of a
// closed window), so the time since the last acknowledgement grows with
// them even though every probe is answered.
func PeerAckSilence(c net.Conn) (time.Duration, bool) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var info *unix.TCPInfo
	var ierr error
	if err := raw.Control(func(fd uintptr) { info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil || ierr != nil {
		return 0, false
	}
	return silence(info)
}

// silence is PeerAckSilence's reading of info. Retransmissions (and
// window probes that carry data) count as data sent; bare window probes
// are counted by the kernel (Probes, back to zero on any answer).
func silence(info *unix.TCPInfo) (time.Duration, bool) {
	pending := info.Unacked > 0 || info.Notsent_bytes > 0
	unanswered := info.Last_ack_recv > info.Last_data_sent || info.Probes >= unansweredProbes
	if !pending || !unanswered {
		return 0, false
	}
	return time.Duration(info.Last_ack_recv) * time.Millisecond, true
}
