package runtime

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// setUserTimeout bounds how long data written to c may stay
// unacknowledged before the kernel fails the connection
// (TCP_USER_TIMEOUT). Without it a connection whose peer vanished with
// data in flight lives on until the retransmissions give up, about 15
// minutes; keep-alive does not help while data is outstanding.
func setUserTimeout(c net.Conn, d time.Duration) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return
	}
	_ = raw.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
	})
}
