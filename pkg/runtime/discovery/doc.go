// Package discovery holds the discovery back-ends of the runtime: key-value
// stores whose keys live as long as the process that wrote them.
//
//   - Etcd: one lease per process (TTL 10 s, kept alive every TTL/2); the
//     lease id is the instance id; Close revokes the lease; a lost lease
//     closes Done with ErrLeaseLost.
//   - File: a directory shared by the processes of one machine; each key is
//     a file whose mtime is touched every max(TTL/3, 1 s); any process
//     removes files older than the TTL.
//   - Mem: a map shared by the runtimes of one process.
//
// Watches list first, then report changes from the listed point on: the
// first event is always a full EventResync snapshot.
//
// The layout of keys (v1/instances/..., v1/mdc/...) belongs to the runtime
// package; stores treat keys as opaque strings.
package discovery
