package kvblock

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// Event-plane payloads (KV events, load metrics, replica-sync events) are
// MessagePack with named fields, as the reference system writes them
// (rmp_serde::to_vec_named): a struct is a map keyed by its field names,
// integers take their most compact form, an externally tagged enum is a
// one-entry map or, for a unit variant, a bare string. The field names are
// the JSON ones: Marshal and Unmarshal read the json struct tags, so one
// set of tags describes both encodings.

// Marshal encodes v as an event-plane payload.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetCustomStructTag("json")
	enc.UseCompactInts(true)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("kvblock: encode %T: %w", v, err)
	}
	return buf.Bytes(), nil
}

// Unmarshal decodes an event-plane payload into v. Unknown fields are
// skipped; an integer read into an unsigned field keeps its 64 bits, so
// hashes that Python engines send as signed numbers arrive as the same
// u64. Errors wrap ErrBadEvent.
func Unmarshal(b []byte, v any) error {
	dec := msgpack.NewDecoder(bytes.NewReader(b))
	dec.SetCustomStructTag("json")
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %T: %w", ErrBadEvent, v, err)
	}
	return nil
}

// EncodeMsgpack writes the externally tagged form: {"stored": {...}},
// {"removed": {...}} or the string "cleared".
func (d EventData) EncodeMsgpack(enc *msgpack.Encoder) error {
	switch {
	case d.Stored != nil:
		return EncodeVariant(enc, KindStored, d.Stored)
	case d.Removed != nil:
		return EncodeVariant(enc, KindRemoved, d.Removed)
	case d.Cleared:
		return enc.EncodeString(KindCleared)
	}
	return fmt.Errorf("%w: empty event data", ErrBadEvent)
}

// DecodeMsgpack reads the externally tagged form; "cleared" is also
// accepted as {"cleared": nil}.
func (d *EventData) DecodeMsgpack(dec *msgpack.Decoder) error {
	*d = EventData{}
	name, payload, err := DecodeVariant(dec)
	if err != nil {
		return err
	}
	switch name {
	case KindStored:
		d.Stored = new(StoreData)
		return payload(d.Stored)
	case KindRemoved:
		d.Removed = new(RemoveData)
		return payload(d.Removed)
	case KindCleared:
		d.Cleared = true
		return payload(nil)
	}
	return fmt.Errorf("%w: unknown event kind %q", ErrBadEvent, name)
}

// EncodeVariant writes a variant of an externally tagged enum that has a
// payload: the one-entry map {name: v}. (A unit variant is its name:
// enc.EncodeString.)
func EncodeVariant(enc *msgpack.Encoder, name string, v any) error {
	if err := enc.EncodeMapLen(1); err != nil {
		return err
	}
	if err := enc.EncodeString(name); err != nil {
		return err
	}
	return enc.Encode(v)
}

// DecodeVariant reads a variant of an externally tagged enum: a unit
// variant (a bare string) or the key of a one-entry map. payload decodes
// the variant's value into its argument, or skips it when given nil; for
// a unit variant it does nothing.
func DecodeVariant(dec *msgpack.Decoder) (name string, payload func(into any) error, err error) {
	code, err := dec.PeekCode()
	if err != nil {
		return "", nil, fmt.Errorf("%w: %w", ErrBadEvent, err)
	}
	switch {
	case msgpcode.IsString(code):
		name, err = dec.DecodeString()
		if err != nil {
			return "", nil, fmt.Errorf("%w: variant name: %w", ErrBadEvent, err)
		}
		return name, func(any) error { return nil }, nil
	case msgpcode.IsFixedMap(code) || code == msgpcode.Map16 || code == msgpcode.Map32:
		n, err := dec.DecodeMapLen()
		if err != nil {
			return "", nil, fmt.Errorf("%w: %w", ErrBadEvent, err)
		}
		if n != 1 {
			return "", nil, fmt.Errorf("%w: a variant map must have one entry, has %d", ErrBadEvent, n)
		}
		name, err = dec.DecodeString()
		if err != nil {
			return "", nil, fmt.Errorf("%w: variant name: %w", ErrBadEvent, err)
		}
		return name, func(into any) error {
			if into == nil {
				return dec.Skip()
			}
			return dec.Decode(into)
		}, nil
	}
	return "", nil, fmt.Errorf("%w: want a variant name or a one-entry map, got code %#x", ErrBadEvent, code)
}

// PayloadJSON renders an event-plane payload as JSON with sorted keys, for
// logs and tests: map keys, nesting and integers exactly as encoded.
func PayloadJSON(b []byte) (string, error) {
	var v any
	dec := msgpack.NewDecoder(bytes.NewReader(b))
	dec.UseLooseInterfaceDecoding(true) // integers as int64/uint64
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadEvent, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadEvent, err)
	}
	return string(out), nil
}
