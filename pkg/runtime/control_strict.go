package runtime

import (
	"encoding/json"

	"github.com/dynamo-go/dynamo/internal/strictjson"
)

// A worker reads each request's control header and the stream address
// inside it (double-encoded, as the reference system writes it) without
// reflection when they are as the runtime writes them; a field it does
// not know, or a value outside strictjson's subset, sends the bytes to
// encoding/json, so the result is always json.Unmarshal's
// (FuzzDecodeRequestControl).

// decodeRequestControl decodes b into c as json.Unmarshal would.
func decodeRequestControl(b []byte, c *requestControl) error {
	var fast requestControl
	if decodeRequestControlStrict(b, &fast) {
		*c = fast
		return nil
	}
	return json.Unmarshal(b, c)
}

func decodeRequestControlStrict(b []byte, c *requestControl) bool {
	r := strictjson.New(b)
	r.Object(func(key []byte) {
		switch string(key) {
		case "id":
			r.StringInto(&c.ID)
		case "request_type":
			r.StringInto(&c.RequestType)
		case "response_type":
			r.StringInto(&c.ResponseType)
		case "payload_codec":
			r.StringInto(&c.PayloadCodec)
		case "connection_info":
			if r.Null() {
				return
			}
			r.Object(func(key []byte) {
				switch string(key) {
				case "transport":
					r.StringInto(&c.ConnectionInfo.Transport)
				case "info":
					r.StringInto(&c.ConnectionInfo.Info)
				default:
					r.Fail()
				}
			})
		case "metadata":
			if r.Null() {
				c.Metadata = nil
				return
			}
			if c.Metadata == nil {
				c.Metadata = map[string]string{}
			}
			r.Object(func(key []byte) {
				if r.Peek() == 'n' {
					r.Fail()
					return
				}
				c.Metadata[string(key)] = r.String()
			})
		case "frontend_send_ts_ns":
			r.Int64Into(&c.FrontendSendTsN)
		default:
			r.Fail()
		}
	})
	return r.End()
}

// decodeStreamInfo decodes b into s as json.Unmarshal would.
func decodeStreamInfo(b []byte, s *tcpStreamInfo) error {
	var fast tcpStreamInfo
	if decodeStreamInfoStrict(b, &fast) {
		*s = fast
		return nil
	}
	return json.Unmarshal(b, s)
}

func decodeStreamInfoStrict(b []byte, s *tcpStreamInfo) bool {
	r := strictjson.New(b)
	r.Object(func(key []byte) {
		switch string(key) {
		case "address":
			r.StringInto(&s.Address)
		case "subject":
			r.StringInto(&s.Subject)
		case "context":
			r.StringInto(&s.Context)
		case "stream_type":
			r.StringInto(&s.StreamType)
		case "mux":
			if r.Null() {
				s.Mux = nil
				return
			}
			if s.Mux == nil {
				s.Mux = new(muxInfo)
			}
			m := s.Mux
			r.Object(func(key []byte) {
				switch string(key) {
				case "version":
					r.IntInto(&m.Version)
				case "server_id":
					r.StringInto(&m.ServerID)
				case "stream_id":
					r.Uint64Into(&m.StreamID)
				default:
					r.Fail()
				}
			})
		default:
			r.Fail()
		}
	})
	return r.End()
}
