//go:build linux

package tcpinfo

import (
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// PeerAckSilence reports whether data written to c is in flight (sent
// and not acknowledged, or waiting for the peer to open its window) and,
// if so, how long ago the peer's kernel last acknowledged anything
// (TCP_INFO). A peer whose process is slow still acknowledges, and
// answers window probes; a vanished host does neither.
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
	if info.Unacked == 0 && info.Notsent_bytes == 0 {
		return 0, false
	}
	return time.Duration(info.Last_ack_recv) * time.Millisecond, true
}
