// Package discovery holds the discovery back-ends of the runtime: key-value
// stores whose keys live as long as the process that wrote them.
//
//   - Etcd: one lease per process (TTL 10 s, kept alive over clientv3's
//     keep-alive stream, a request about every TTL/3); the lease id is the
//     instance id; Close revokes the lease; a lost lease closes Done with
//     ErrLeaseLost. Keys the store owns are re-created, under the same
//     lease, when etcd comes back after an interruption.
//   - File: a directory shared by the processes of one machine; each key is
//     a file whose mtime is touched every TTL/3; any process
//     removes files older than the TTL. The on-disk format is our own: one
//     flat directory, file names are percent-encoded keys (see File).
//   - Mem: a map shared by the runtimes of one process (MemSpace).
//
// Watches list first, then report changes from the listed point on: the
// first event is always a full EventResync snapshot.
//
// # Lifecycle
//
// Constructors start nothing. The owner of a store calls Run (which blocks
// and keeps the keys alive), stops it by cancelling its ctx or with Close,
// and watches Done: when it is closed with ErrLeaseLost the process's keys
// are gone and it must stop serving. Close removes the process's keys at
// once; Orphan (etcd and file, for tests) stops keeping them alive without
// removing them, as if the process had died. Each Watch owns one goroutine,
// which ends when the Watch's ctx ends or the store stops; Close waits for
// it. All methods are safe for concurrent use.
//
// Errors wrap ErrExists, ErrLeaseLost or ErrClosed where they apply; match
// them with errors.Is. NewEtcd retries until its ctx ends, except for what
// retrying cannot cure: its error then wraps ErrAuthFailed or ErrTLS.
//
// The layout of keys (v1/instances/..., v1/mdc/...) belongs to the runtime
// package; stores treat keys as opaque strings.
package discovery
