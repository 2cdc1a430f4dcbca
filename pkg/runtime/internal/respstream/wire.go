package respstream

import (
	"encoding/json"
	"fmt"
	"net"
	"time"

	"github.com/dynamo-go/dynamo/internal/strictjson"
)

// Wire messages of the response stream, for both of its ends
// (docs/protocol.md describes them in full).

// MuxVersion is the version of the shared-connection protocol
// (docs/protocol.md §7.8) this runtime speaks. 2: the caller answers what
// it reads within a second (keep-going frames), and the worker takes a
// caller that answers nothing for 30 s for gone; a version-1 caller did
// not answer and would be taken for gone, so the versions do not mix
// (they fall back to the classic protocol).
const MuxVersion = 2

// StreamTypeResponse is the stream type of a response stream: in the
// caller's connection info, and in the worker's handshake.
const StreamTypeResponse = "response"

// Sentinel is the control message (a JSON string in a header-only frame)
// that is a stream's last frame after complete_final.
const Sentinel = `"sentinel"`

const (
	maxControlHeader = 128 << 10

	streamTypeResponseMux = "response_mux"
)

// handshake is the first frame a worker sends after dialling the caller,
// and the opening frame of each stream on a shared connection.
type handshake struct {
	Subject    string `json:"subject"`
	StreamType string `json:"stream_type"`
}

// decodeHandshake decodes b into hs as json.Unmarshal would: a stream's
// opening frame as the runtime writes it without reflection (one per
// request), anything else by encoding/json.
func decodeHandshake(b []byte, hs *handshake) error {
	r := strictjson.New(b)
	var fast handshake
	r.Object(func(key []byte) {
		var into *string
		switch string(key) {
		case "subject":
			into = &fast.Subject
		case "stream_type":
			into = &fast.StreamType
		default:
			r.Fail()
			return
		}
		r.StringInto(into)
	})
	if r.End() {
		*hs = fast
		return nil
	}
	return json.Unmarshal(b, hs)
}

// muxHello is the worker's handshake on a shared connection.
type muxHello struct {
	StreamType string `json:"stream_type"`
	Version    int    `json:"version"`
	ServerID   string `json:"server_id"`
}

// firstFrame is what the caller reads from the first frame of a
// connection: a classic handshake or a shared-connection handshake
// (muxHello).
type firstFrame struct {
	Subject    string `json:"subject"`
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

// Control messages: JSON strings in header-only frames.
var (
	ctrlStop     = []byte(`"stop"`)
	ctrlKill     = []byte(`"kill"`)
	ctrlSentinel = []byte(Sentinel)
	// ctrlReset: the worker abandons a stream on a shared connection (the
	// counterpart of closing a classic one).
	ctrlReset = []byte(`"reset"`)
	// ctrlAck: the caller established a stream opened on a shared
	// connection.
	ctrlAck = []byte(`"ack"`)
)

func decodeControl(b []byte) (string, error) {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return "", fmt.Errorf("runtime: bad control message: %w", err)
	}
	return s, nil
}

// streamKeepAlive is the TCP keep-alive of every response stream, at both
// ends: the connections a caller accepts and the shared ones a worker
// dials. On a stream the worker sends and the caller only reads, so when
// the worker's host goes silent (a network partition, a power loss: no
// FIN or RST ever comes) nothing tells the caller's socket. Discovery
// does not either: an established stream outlives its instance's removal,
// so that a worker draining at shutdown finishes it. With Go's default
// keep-alive (15 s idle, then 9 probes 15 s apart) the read would wait
// about 2.5 minutes; with this one the connection fails about 5 s after
// the last packet from the peer's host, and the call ends Disconnected,
// which migration re-issues. Probes are answered by the peer's kernel, so
// a slow engine is never taken for a dead one.
var streamKeepAlive = net.KeepAliveConfig{Enable: true, Idle: 2 * time.Second, Interval: time.Second, Count: 3}

func setTCPOptions(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
}
