package testenv

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// otlpIDFields are the OTLP/JSON fields holding trace and span ids, with
// the length of the id in bytes, in both spellings protojson accepts.
var otlpIDFields = map[string]int{
	"traceId": 16, "trace_id": 16,
	"spanId": 8, "span_id": 8,
	"parentSpanId": 8, "parent_span_id": 8,
}

// unmarshalOTLPJSON decodes OTLP/JSON into m. OTLP/JSON is protojson with
// one difference: trace and span ids are hex strings, not base64; they are
// turned into base64 first. Unknown fields are ignored, as the OTLP
// specification asks of receivers.
func unmarshalOTLPJSON(b []byte, m proto.Message) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return fmt.Errorf("otlp json: %w", err)
	}
	if err := hexIDsToBase64(v); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("otlp json: %w", err)
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, m); err != nil {
		return fmt.Errorf("otlp json: %w", err)
	}
	return nil
}

// hexIDsToBase64 rewrites, in place, every id field of v whose value is
// a hex id of the right length into base64.
func hexIDsToBase64(v any) error {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if n, ok := otlpIDFields[k]; ok {
				if s, ok := e.(string); ok && len(s) == 2*n {
					id, err := hex.DecodeString(s)
					if err != nil {
						return fmt.Errorf("otlp json: %s %q is not hex: %w", k, s, err)
					}
					x[k] = base64.StdEncoding.EncodeToString(id)
					continue
				}
			}
			if err := hexIDsToBase64(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			if err := hexIDsToBase64(e); err != nil {
				return err
			}
		}
	}
	return nil
}
