// Package testenv starts the real servers the runtime talks to, in the test
// process: an embedded etcd (go.etcd.io/etcd/server/v3/embed) and a NATS
// server (github.com/nats-io/nats-server/v2). Nothing has to be installed
// for `go test ./...` to exercise the real protocols.
//
// Every server is stopped by t.Cleanup. Servers keep their address across
// Stop/Start, so tests can restart one and check that clients reconnect.
package testenv
