// Package responsestore keeps the stored responses of the Responses API
// (POST /v1/responses with store, previous_response_id, GET and DELETE
// /v1/responses/{id}, background responses): one Record per response,
// kept for a retention TTL.
//
// Two stores implement the same methods (Get, Put, Delete):
//
//   - File, an embedded bbolt database in a file under a data directory:
//     the default, for one frontend. Expired records are never returned
//     and are swept by File.Run.
//   - NATS, a JetStream key-value bucket whose TTL is the retention:
//     several frontends behind one load balancer share it, so that a
//     conversation may continue on any of them.
//
// Lifecycle: a store is built by its constructor, which starts nothing
// and touches neither the file nor the server; the first operation opens
// the file (or finds or creates the bucket), and an operation that fails
// for want of the file or the server tries again on the next call, so a
// frontend starts while its store is down. File.Run sweeps expired
// records until its context ends; Close releases the file. Both types are
// safe for concurrent use.
//
// Errors: ErrNotFound (no such record, or it expired), ErrUnavailable (the
// file cannot be opened or written, the server does not answer),
// ErrTooLarge (the record exceeds the store's value limit), each matched
// with errors.Is.
package responsestore
