package runtime

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

var validName = regexp.MustCompile(`^[a-z0-9_-]+$`)

// ErrInvalidName is returned for a namespace, component or endpoint name
// outside [a-z0-9_-] (namespaces may also hold dots between segments).
var ErrInvalidName = NewError(TypeInvalidArgument, "runtime: invalid name")

func checkName(kind, name string, dotted bool) error {
	parts := []string{name}
	if dotted {
		parts = strings.Split(name, ".")
	}
	for _, p := range parts {
		if !validName.MatchString(p) {
			return fmt.Errorf("%w: %s %q must match [a-z0-9_-]+", ErrInvalidName, kind, name)
		}
	}
	return nil
}

// EndpointID names an endpoint: namespace, component and endpoint name.
type EndpointID struct {
	Namespace string
	Component string
	Name      string
}

// ParseEndpointID parses "dyn://ns.component.endpoint" (the dyn:// prefix is
// optional). The namespace may itself be dotted; the last two segments are
// the component and the endpoint.
func ParseEndpointID(s string) (EndpointID, error) {
	s = strings.TrimPrefix(s, "dyn://")
	parts := strings.Split(s, ".")
	if len(parts) < 3 {
		return EndpointID{}, fmt.Errorf("%w: endpoint %q is not ns.component.endpoint", ErrInvalidName, s)
	}
	id := EndpointID{
		Namespace: strings.Join(parts[:len(parts)-2], "."),
		Component: parts[len(parts)-2],
		Name:      parts[len(parts)-1],
	}
	return id, id.Validate()
}

// Validate checks the three names.
func (e EndpointID) Validate() error {
	if err := checkName("namespace", e.Namespace, true); err != nil {
		return err
	}
	if err := checkName("component", e.Component, false); err != nil {
		return err
	}
	return checkName("endpoint", e.Name, false)
}

// String returns "dyn://ns.component.endpoint".
func (e EndpointID) String() string {
	return "dyn://" + e.Namespace + "." + e.Component + "." + e.Name
}

// Path returns "ns/component/endpoint", the form used in keys and errors.
func (e EndpointID) Path() string {
	return e.Namespace + "/" + e.Component + "/" + e.Name
}

// Discovery key layout (bucket + key, as the reference system's etcd keys).
const (
	InstancesBucket = "v1/instances"
	ModelsBucket    = "v1/mdc"
)

// InstanceKey returns v1/instances/{ns}/{component}/{endpoint}/{id:x}.
func InstanceKey(ep EndpointID, id uint64) string {
	return EndpointPrefix(InstancesBucket, ep) + strconv.FormatUint(id, 16)
}

// EndpointPrefix returns "{bucket}/{ns}/{component}/{endpoint}/".
func EndpointPrefix(bucket string, ep EndpointID) string {
	return bucket + "/" + ep.Path() + "/"
}

// instanceIDFromKey parses the hex instance id in the last segment of a
// discovery key (needed for deletes, which carry no value).
func instanceIDFromKey(key string) (uint64, error) {
	i := strings.LastIndexByte(key, '/')
	id, err := strconv.ParseUint(key[i+1:], 16, 64)
	if err != nil {
		return 0, fmt.Errorf("runtime: key %q has no instance id: %w", key, err)
	}
	return id, nil
}

// ServiceName is the NATS service name of a component: slug("{ns}_{component}").
func ServiceName(namespace, component string) string {
	return slug(namespace + "_" + component)
}

// NATSSubject returns the request subject of one instance of an endpoint:
// {slug(ns_component)}.{endpoint}-{id:x}.
func NATSSubject(ep EndpointID, id uint64) string {
	return ServiceName(ep.Namespace, ep.Component) + "." + ep.Name + "-" + strconv.FormatUint(id, 16)
}

// TCPRoutingKey returns the routing key of one instance of an endpoint on
// the TCP request plane: {id:x}/{endpoint}.
func TCPRoutingKey(ep EndpointID, id uint64) string {
	return strconv.FormatUint(id, 16) + "/" + ep.Name
}

func slug(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}
