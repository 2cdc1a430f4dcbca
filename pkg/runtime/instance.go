package runtime

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Transport says how requests reach an instance. Exactly one field is set.
// Its JSON is the reference system's externally tagged enum:
// {"tcp":"host:port/{id:x}/{endpoint}"} or {"nats_tcp":"<subject>"}.
type Transport struct {
	// TCP is "host:port/{routing key}" on the TCP request plane.
	TCP string `json:"tcp,omitempty"`
	// NATS is the NATS subject of the instance.
	NATS string `json:"nats_tcp,omitempty"`
}

// splitTCP splits a TCP transport into its address and routing key.
func (t Transport) splitTCP() (addr, path string, err error) {
	addr, path, ok := strings.Cut(t.TCP, "/")
	if !ok || addr == "" || path == "" {
		return "", "", fmt.Errorf("runtime: bad tcp transport %q", t.TCP)
	}
	return addr, path, nil
}

// Instance is one live registration of an endpoint by one process: the
// value stored under v1/instances/{ns}/{component}/{endpoint}/{id:x}.
type Instance struct {
	Namespace string    `json:"namespace"`
	Component string    `json:"component"`
	Endpoint  string    `json:"endpoint"`
	ID        uint64    `json:"instance_id"`
	Transport Transport `json:"transport"`
}

// EndpointID returns the endpoint the instance serves.
func (i Instance) EndpointID() EndpointID {
	return EndpointID{Namespace: i.Namespace, Component: i.Component, Name: i.Endpoint}
}

// MarshalJSON writes the record with its "type":"Endpoint" tag.
func (i Instance) MarshalJSON() ([]byte, error) {
	type plain Instance
	return json.Marshal(struct {
		Type string `json:"type"`
		plain
	}{"Endpoint", plain(i)})
}

// UnmarshalJSON reads the tagged record, and the legacy untagged one.
func (i *Instance) UnmarshalJSON(b []byte) error {
	type plain Instance
	var rec struct {
		Type string `json:"type"`
		plain
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return err
	}
	if rec.Type != "" && rec.Type != "Endpoint" {
		return fmt.Errorf("runtime: discovery record of type %q is not an endpoint", rec.Type)
	}
	*i = Instance(rec.plain)
	return nil
}
