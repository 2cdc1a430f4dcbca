// Package e2e tests the product as a user runs it: the frontend and mocker
// binaries, built once by TestMain, run as separate processes that find
// each other through discovery (an in-process etcd, or a file directory)
// and talk over a request plane (TCP, or an in-process NATS). The tests
// speak to the frontend only over HTTP, with net/http and with the official
// OpenAI Go SDK, and assert what a client would notice: answers, stream
// framing, usage, status codes and error bodies, the model list, metrics.
//
// Tests talk only to loopback, and no test picks a port for a process: each
// child binds 127.0.0.1 port 0 (the frontend's --http-port 0, the mocker's
// DYN_SYSTEM_PORT=0) and the test reads the address it got from its log.
// The exception is TestAcrossHosts, which builds simulated machines in
// network namespaces (netns_test.go) and runs each process on its own
// host's address, again on port 0; it needs root and skips otherwise
// (sudo go test -run TestAcrossHosts ./test/e2e/).
// Every helper that waits for a process fails, when the process exits or
// the wait times out, with the last lines of the process's log.
//
// The package has no non-test code; it is skipped under go test -short.
package e2e
