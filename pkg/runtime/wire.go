package runtime

import (
	"bytes"
	"encoding/json"

	"github.com/dynamo-go/dynamo/pkg/runtime/internal/respstream"
)

// Wire messages of the request envelope and the response stream
// (docs/protocol.md describes them in full).

const (
	// maxControlHeader bounds a request envelope's control header.
	maxControlHeader = 128 << 10

	codecJSON = "json"

	transportTCPServer = "tcp_server"

	// muxVersion is the version of the shared-connection protocol
	// (docs/protocol.md §7.8) this runtime speaks.
	muxVersion = respstream.MuxVersion
)

// requestControl is the JSON header of a request envelope
// (RequestControlMessage). The body of the envelope is the payload.
type requestControl struct {
	ID              string            `json:"id"`
	RequestType     string            `json:"request_type"`
	ResponseType    string            `json:"response_type"`
	PayloadCodec    string            `json:"payload_codec,omitempty"`
	ConnectionInfo  connectionInfo    `json:"connection_info"`
	Metadata        map[string]string `json:"metadata,omitempty"`
	FrontendSendTsN int64             `json:"frontend_send_ts_ns,omitempty"`
}

// connectionInfo tells the worker where to call home. Info is itself a JSON
// string holding a tcpStreamInfo (double-encoded, as the reference system).
type connectionInfo struct {
	Transport string `json:"transport"`
	Info      string `json:"info"`
}

type tcpStreamInfo struct {
	Address    string `json:"address"`
	Subject    string `json:"subject"`
	Context    string `json:"context"`
	StreamType string `json:"stream_type"`
	// Mux is our addition: the caller accepts the stream on a shared
	// connection. Workers that do not know it ignore it.
	Mux *muxInfo `json:"mux,omitempty"`
}

// muxInfo offers a shared response connection (docs/protocol.md §7.8).
type muxInfo struct {
	Version  int    `json:"version"`
	ServerID string `json:"server_id"`
	StreamID uint64 `json:"stream_id"`
}

// prologue is the second frame: whether the handler started. ErrorDetail is
// our addition: the typed error, so its class survives the hop; peers that
// only know "error" still get the text.
type prologue struct {
	Error       *string `json:"error"`
	ErrorDetail *Error  `json:"error_detail,omitempty"`
}

// annotated is one response item (Annotated<T>): data, or an error event.
type annotated struct {
	Data    json.RawMessage `json:"data,omitempty"`
	ID      string          `json:"id,omitempty"`
	Event   string          `json:"event,omitempty"`
	Comment []string        `json:"comment,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// streamWrapper is the body of a data frame (NetworkStreamWrapper).
type streamWrapper struct {
	Data          *annotated `json:"data,omitempty"`
	CompleteFinal bool       `json:"complete_final"`
}

// ctrlSentinel is the last frame of a stream, after complete_final (the
// other control messages are respstream's).
var ctrlSentinel = []byte(respstream.Sentinel)

var completeFinalFrame = []byte(`{"complete_final":true}`)

// appendDataFrame appends the wrapper for one data item without a
// reflection round trip: {"data":{"data":<item>},"complete_final":false}.
func appendDataFrame(dst, item []byte) []byte {
	dst = append(dst, `{"data":{"data":`...)
	dst = append(dst, item...)
	return append(dst, `},"complete_final":false}`...)
}

var (
	dataFramePrefix = []byte(`{"data":{"data":`)
	dataFrameSuffix = []byte(`},"complete_final":false}`)
)

// plainItem returns the item of a data frame in exactly the shape
// appendDataFrame writes, without a full decode; ok is false for any other
// shape (error items, other encoders), which then take the full decode.
func plainItem(frame []byte) (item []byte, ok bool) {
	if !bytes.HasPrefix(frame, dataFramePrefix) || !bytes.HasSuffix(frame, dataFrameSuffix) {
		return nil, false
	}
	item = frame[len(dataFramePrefix) : len(frame)-len(dataFrameSuffix)]
	return item, len(item) > 0 && json.Valid(item)
}

func errorFrame(e *Error) ([]byte, error) {
	return json.Marshal(streamWrapper{Data: &annotated{Event: "error", Error: e}})
}
