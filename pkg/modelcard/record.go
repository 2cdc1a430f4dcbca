package modelcard

import (
	"encoding/json"
	"fmt"
)

// RecordType is the "type" of a model Record.
const RecordType = "Model"

// Record is the value a worker stores under Key: the reference system's
// model registration, {"type":"Model","namespace","component","endpoint",
// "instance_id","card_json":{...},"model_suffix":null}. The card is kept as
// raw JSON so that DecodeCard can verify its checksum.
type Record struct {
	Type        string          `json:"type"`
	Namespace   string          `json:"namespace"`
	Component   string          `json:"component"`
	Endpoint    string          `json:"endpoint"`
	InstanceID  uint64          `json:"instance_id"`
	CardJSON    json.RawMessage `json:"card_json"`
	ModelSuffix *string         `json:"model_suffix"`
}

// NewRecord marshals c (setting its checksum) into a Record for one
// instance of an endpoint.
func NewRecord(ns, component, endpoint string, instanceID uint64, c *Card) (*Record, error) {
	b, err := c.Marshal()
	if err != nil {
		return nil, err
	}
	return &Record{
		Type: RecordType, Namespace: ns, Component: component, Endpoint: endpoint,
		InstanceID: instanceID, CardJSON: b,
	}, nil
}

// Key returns the discovery key of the record.
func (r *Record) Key() string {
	p := KeyParts{Namespace: r.Namespace, Component: r.Component, Endpoint: r.Endpoint, InstanceID: r.InstanceID}
	if r.ModelSuffix != nil {
		p.Suffix = *r.ModelSuffix
	}
	return p.String()
}

// DecodeCard decodes and verifies the embedded card (see Unmarshal).
func (r *Record) DecodeCard() (*Card, error) {
	if len(r.CardJSON) == 0 || string(r.CardJSON) == "null" {
		return nil, fmt.Errorf("%w: record for instance %x has no card_json", ErrInvalid, r.InstanceID)
	}
	return Unmarshal(r.CardJSON)
}

// DecodeRecord decodes a Record stored under a card key. It does not decode
// the card: call DecodeCard.
func DecodeRecord(b []byte) (*Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%w: model record: %w", ErrInvalid, err)
	}
	if r.Type != "" && r.Type != RecordType {
		return nil, fmt.Errorf("%w: record type %q, want %q", ErrInvalid, r.Type, RecordType)
	}
	return &r, nil
}
