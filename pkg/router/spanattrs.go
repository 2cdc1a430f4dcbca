package router

import (
	"fmt"

	"go.opentelemetry.io/otel/attribute"
)

// Attributes of the routing span (docs/observability.md).
const (
	// attrPolicy is the policy that chose the instance: round_robin,
	// random, direct (the request named it) or kv.
	attrPolicy = attribute.Key("router.policy")
	// attrInstance is the chosen instance id, hex.
	attrInstance = attribute.Key("worker.instance_id")
)

const policyDirect = "direct"

// policyName names p for the routing span. A policy that wraps another
// (an Unwrap() Policy method, as the admission stage's spreading does) is
// named after the one it wraps.
func policyName(p Policy) string {
	if w, ok := p.(interface{ Unwrap() Policy }); ok {
		return policyName(w.Unwrap())
	}
	switch p.(type) {
	case *RoundRobin:
		return "round_robin"
	case Random, *Random:
		return "random"
	case Direct, *Direct:
		return policyDirect
	case *LeastLoaded:
		return "least_loaded"
	}
	return fmt.Sprintf("%T", p)
}
