// Package kvblock holds what KV-cache-aware engines and the KV router must
// agree on, byte for byte: token-block hashing (XXH3-64, seed 1337, tokens
// as little-endian u32, full blocks only, chained sequence hashes), the KV
// event types a worker publishes (RouterEvent and friends, with the
// reference system's JSON field names), the per-pass load metrics
// (ForwardPassMetrics, LoadEvent) and the event-plane subjects they travel
// on.
//
// It is a leaf package: standard library plus the XXH3 implementation, no
// goroutines, no state. Everything here is safe for concurrent use.
//
// Errors: UnmarshalJSON methods return errors prefixed "kvblock: ".
package kvblock
