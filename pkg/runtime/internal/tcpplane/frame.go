package tcpplane

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/dynamo-go/dynamo/internal/strictjson"
)

// DefaultMaxMessageSize bounds path+headers+payload of one request when a
// config leaves MaxMessageSize at 0: 32 MiB (DYN_TCP_MAX_MESSAGE_SIZE).
const DefaultMaxMessageSize = 32 << 20

// Ack texts the server sends on its own behalf.
const (
	ackUnknownEndpoint = "Unknown endpoint: "
	ackTooLarge        = "message too large"
	ackBadHeaders      = "invalid headers: "
)

// maxAckText bounds the error text a client accepts in one ack.
const maxAckText = 1 << 20

// encodeRequest builds one request frame in a single allocation.
func encodeRequest(path string, headers map[string]string, payload []byte, maxSize int) ([]byte, error) {
	var hdr []byte
	if len(headers) > 0 {
		hdr = appendHeaders(make([]byte, 0, 64*len(headers)), headers)
	}
	switch {
	case len(path) > math.MaxUint16:
		return nil, fmt.Errorf("%w: path is %d bytes, limit %d", ErrTooLarge, len(path), math.MaxUint16)
	case len(hdr) > math.MaxUint16:
		return nil, fmt.Errorf("%w: headers are %d bytes, limit %d", ErrTooLarge, len(hdr), math.MaxUint16)
	case uint64(len(path))+uint64(len(hdr))+uint64(len(payload)) > uint64(maxSize) || uint64(len(payload)) > math.MaxUint32:
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(path)+len(hdr)+len(payload), maxSize)
	}
	b := make([]byte, 0, 2+len(path)+2+len(hdr)+4+len(payload))
	b = binary.BigEndian.AppendUint16(b, uint16(len(path)))
	b = append(b, path...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(hdr)))
	b = append(b, hdr...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	b = append(b, payload...)
	return b, nil
}

// decodeHeaders parses the headers section. Empty input and "{}" yield nil.
func decodeHeaders(b []byte) (map[string]string, error) {
	if len(b) == 0 || string(b) == "{}" {
		return nil, nil
	}
	if h, ok := decodeHeadersStrict(b); ok {
		return h, nil
	}
	var h map[string]string
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, err
	}
	return h, nil
}

// decodeHeadersStrict reads headers as the runtime writes them (keys and
// values strings within strictjson's subset) without reflection, and
// reports whether it could; encoding/json decodes the rest.
func decodeHeadersStrict(b []byte) (map[string]string, bool) {
	r := strictjson.New(b)
	h := make(map[string]string, 4)
	r.Object(func(key []byte) {
		if r.Peek() == 'n' {
			r.Fail() // null: encoding/json's rules for it are its own
			return
		}
		h[string(key)] = r.String()
	})
	return h, r.End()
}

func maxSizeOr(n int) int {
	if n <= 0 {
		return DefaultMaxMessageSize
	}
	return n
}

// appendHeaders appends headers as a JSON object. It matches
// encoding/json's output except for key order and HTML escaping, neither
// of which the reader cares about.
func appendHeaders(b []byte, headers map[string]string) []byte {
	b = append(b, '{')
	first := true
	for k, v := range headers {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = appendJSONString(b, v)
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string literal, as encoding/json
// writes it without HTML escaping.
func appendJSONString(b []byte, s string) []byte { return strictjson.AppendString(b, s, false) }
