// Package testenv starts the real servers the runtime talks to, in the test
// process: an embedded etcd (go.etcd.io/etcd/server/v3/embed) and a NATS
// server (github.com/nats-io/nats-server/v2). Nothing has to be installed
// for `go test ./...` to exercise the real protocols.
//
// No server binds a port picked in advance, which another process on a
// busy machine could take first: etcd serves clients on a unix socket in a
// directory of its own, NATS listens on 127.0.0.1 on a port the kernel
// picks when it binds. Each reports its URL.
//
// Every server is stopped by t.Cleanup. Servers keep their address across
// Stop/Start, so tests can restart one and check that clients reconnect.
//
// Buffer collects what a child process or a logger writes while the test
// reads it.
package testenv
