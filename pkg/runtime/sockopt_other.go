//go:build !linux

package runtime

import (
	"net"
	"time"
)

// peerAckSilence is not known outside Linux: the worker then notices a
// vanished caller by its silence alone (see muxLink.gone).
func peerAckSilence(net.Conn) (time.Duration, bool) { return 0, false }
