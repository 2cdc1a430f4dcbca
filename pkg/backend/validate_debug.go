//go:build dynamo_debug

package backend

// Debug builds (go build -tags dynamo_debug) panic on a stream contract
// violation, like the reference system's debug-only validator.
func init() { PanicOnViolation = true }
