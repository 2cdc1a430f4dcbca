//go:build !linux

package runtime

import (
	"net"
	"time"
)

// setUserTimeout is a no-op where TCP_USER_TIMEOUT is not available.
func setUserTimeout(net.Conn, time.Duration) {}
