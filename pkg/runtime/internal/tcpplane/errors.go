package tcpplane

import "errors"

// Errors returned by Server and Client; match them with errors.Is.
var (
	// ErrClosed reports use of a closed Server or Client.
	ErrClosed = errors.New("tcpplane: closed")
	// ErrConnLost reports a connection that broke while requests were
	// queued or waiting for their acks.
	ErrConnLost = errors.New("tcpplane: connection lost")
	// ErrAckTimeout reports a request that was not acked within
	// ClientConfig.AckTimeout on a connection that is alive: its peer is
	// slow (busy), not gone. Only that request fails; the connection and
	// the other requests on it go on. When the peer is gone (see
	// ClientConfig.DeadTimeout) the connection fails instead, and the
	// error wraps ErrConnLost as well.
	ErrAckTimeout = errors.New("tcpplane: ack timeout")
	// ErrTooLarge reports a request that exceeds the frame limits: path or
	// headers over 65535 bytes, or path+headers+payload over
	// MaxMessageSize.
	ErrTooLarge = errors.New("tcpplane: message too large")
	// ErrProtocol reports bytes from the peer that break the framing.
	ErrProtocol = errors.New("tcpplane: protocol error")
)
