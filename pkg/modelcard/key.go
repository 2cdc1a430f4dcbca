package modelcard

import (
	"fmt"
	"strconv"
	"strings"
)

// Prefix is the discovery prefix under which workers publish cards; the
// frontend lists and watches it.
const Prefix = "v1/mdc/"

// Key returns the lease-bound key of one instance's card:
// v1/mdc/{ns}/{component}/{endpoint}/{instance_id:x} (lowercase hex, no 0x).
func Key(ns, component, endpoint string, instanceID uint64) string {
	return EndpointPrefix(ns, component, endpoint) + strconv.FormatUint(instanceID, 16)
}

// NamespacePrefix returns v1/mdc/{ns}/, the prefix a frontend restricted to
// one namespace watches.
func NamespacePrefix(ns string) string {
	return Prefix + ns + "/"
}

// EndpointPrefix returns v1/mdc/{ns}/{component}/{endpoint}/.
func EndpointPrefix(ns, component, endpoint string) string {
	return Prefix + ns + "/" + component + "/" + endpoint + "/"
}

// KeyParts is a card key taken apart.
type KeyParts struct {
	Namespace  string
	Component  string
	Endpoint   string
	InstanceID uint64
	// Suffix is the LoRA adapter suffix of v1/mdc/.../{id:x}/{suffix}, or "".
	Suffix string
}

// String rebuilds the key.
func (p KeyParts) String() string {
	k := Key(p.Namespace, p.Component, p.Endpoint, p.InstanceID)
	if p.Suffix != "" {
		k += "/" + p.Suffix
	}
	return k
}

// ParseKey takes a card key apart (needed on deletes, which carry no value).
// It fails with ErrInvalid for a key outside Prefix or of the wrong shape.
func ParseKey(key string) (KeyParts, error) {
	rest, ok := strings.CutPrefix(key, Prefix)
	if !ok {
		return KeyParts{}, fmt.Errorf("%w: key %q is not under %s", ErrInvalid, key, Prefix)
	}
	seg := strings.Split(rest, "/")
	if len(seg) != 4 && len(seg) != 5 {
		return KeyParts{}, fmt.Errorf("%w: key %q: want %s{ns}/{component}/{endpoint}/{instance_id:x}[/{suffix}]", ErrInvalid, key, Prefix)
	}
	for _, s := range seg {
		if s == "" {
			return KeyParts{}, fmt.Errorf("%w: key %q has an empty segment", ErrInvalid, key)
		}
	}
	id, err := strconv.ParseUint(seg[3], 16, 64)
	if err != nil {
		return KeyParts{}, fmt.Errorf("%w: key %q: instance id: %w", ErrInvalid, key, err)
	}
	p := KeyParts{Namespace: seg[0], Component: seg[1], Endpoint: seg[2], InstanceID: id}
	if len(seg) == 5 {
		p.Suffix = seg[4]
	}
	return p, nil
}
