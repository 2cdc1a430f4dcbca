//go:build !linux

package tcpinfo

import (
	"net"
	"time"
)

// PeerAckSilence is not known outside Linux: callers then tell a vanished
// peer by its silence alone.
func PeerAckSilence(net.Conn) (time.Duration, bool) { return 0, false }
