package respstream

import (
	"encoding/json"
	"fmt"
	"net"
	"time"
)

// Wire messages of the response stream (docs/protocol.md describes them
// in full).

// MuxVersion is the version of the shared-connection protocol
// (docs/protocol.md §7.8) this runtime speaks. 2: the caller answers what
// it reads within a second (keep-going frames), and the worker takes a
// caller that answers nothing for 30 s for gone; a version-1 caller did
// not answer and would be taken for gone, so the versions do not mix
// (they fall back to the classic protocol).
const MuxVersion = 2

const (
	maxControlHeader = 128 << 10

	streamTypeResponse    = "response"
	streamTypeResponseMux = "response_mux"
)

// handshake is the first frame a worker sends after dialling the caller,
// and the opening frame of each stream on a shared connection.
type handshake struct {
	Subject    string `json:"subject"`
	StreamType string `json:"stream_type"`
}

// muxHello is the worker's handshake on a shared connection.
type muxHello struct {
	StreamType string `json:"stream_type"`
	Version    int    `json:"version"`
	ServerID   string `json:"server_id"`
}

// muxAccept is the caller's answer to a muxHello: the connection is
// shared from now on, and every stream starts with Window bytes of credit.
type muxAccept struct {
	StreamType string `json:"stream_type"`
	Version    int    `json:"version"`
	Window     int64  `json:"window"`
}

// muxGrant returns flow-control credit for one stream (caller -> worker).
type muxGrant struct {
	Window int64 `json:"window"`
}

// ctrlReset: the worker abandons a stream on a shared connection (the
// counterpart of closing a classic one).
var ctrlReset = []byte(`"reset"`)

func decodeControl(b []byte) (string, error) {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return "", fmt.Errorf("runtime: bad control message: %w", err)
	}
	return s, nil
}

// streamKeepAlive is the TCP keep-alive of the shared connections a
// worker dials, the same as the caller's on the response streams it
// accepts: the connection fails about 5 s after the last packet from the
// peer's host.
var streamKeepAlive = net.KeepAliveConfig{Enable: true, Idle: 2 * time.Second, Interval: time.Second, Count: 3}

func setTCPOptions(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
}
