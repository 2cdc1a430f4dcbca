package runtime

import (
	"encoding/json"
	"reflect"
	"testing"
)

// controlShapes are control headers and stream addresses as the runtime
// writes them, and at the edges of what is read without reflection.
var controlShapes = []string{
	`{"id":"4eb8eef9-6720","request_type":"single_in","response_type":"many_out","payload_codec":"json","connection_info":{"transport":"tcp_server","info":"{\"address\":\"192.0.2.2:36217\",\"subject\":\"2ad9\",\"context\":\"4eb8\",\"stream_type\":\"response\",\"mux\":{\"version\":2,\"server_id\":\"bc0f\",\"stream_id\":5}}"},"frontend_send_ts_ns":1795858747582127789}`,
	`{"id":"a","metadata":{"k":"v","k":"w"},"metadata":{"l":"x"},"connection_info":null,"frontend_send_ts_ns":-1}`,
	`{"metadata":{"k":null}}`, `{"metadata":null,"id":null}`, `{"id":"a","extra":1}`, `{"ID":"a"}`,
	`{"frontend_send_ts_ns":1.5}`, `{"frontend_send_ts_ns":9223372036854775808}`, `{"id":"\ud800"}`, `{"id":"a"} x`,
	`{"address":"h:1","subject":"s","context":"c","stream_type":"response","mux":{"version":2,"server_id":"x","stream_id":18446744073709551615}}`,
	`{"address":"h:1","mux":null}`, `{"mux":{"version":2},"mux":{"stream_id":3}}`, `{"mux":{"stream_id":-1}}`, `{"mux":{"other":1}}`,
}

// decodeRequestControl and decodeStreamInfo are json.Unmarshal.
func FuzzDecodeRequestControl(f *testing.F) {
	for _, in := range controlShapes {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var c, wc requestControl
		err, werr := decodeRequestControl(in, &c), json.Unmarshal(in, &wc)
		if (err == nil) != (werr == nil) || err == nil && !reflect.DeepEqual(c, wc) {
			t.Fatalf("control %q: %+v (%v), encoding/json %+v (%v)", in, c, err, wc, werr)
		}
		var s, ws tcpStreamInfo
		err, werr = decodeStreamInfo(in, &s), json.Unmarshal(in, &ws)
		if (err == nil) != (werr == nil) || err == nil && !reflect.DeepEqual(s, ws) {
			t.Fatalf("stream info %q: %+v (%v), encoding/json %+v (%v)", in, s, err, ws, werr)
		}
	})
}
