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
// StartOTLP starts an OTLP trace receiver, as an OpenTelemetry collector
// would be: the collector's gRPC TraceService and OTLP/HTTP POST
// /v1/traces (binary protobuf or OTLP/JSON, optionally gzip-compressed),
// each on 127.0.0.1. A process under test exports to it with the standard
// exporters (OTEL_EXPORTER_OTLP_ENDPOINT set to GRPCEndpoint with an
// "http://" scheme, or to HTTPEndpoint). What arrives is flattened into
// Spans (hex ids, parent, kind, service.name, attributes as Go values,
// status, events, links) that a test reads with Spans, ByName or WaitFor,
// which polls until a predicate holds and otherwise fails with a dump of
// every span received.
//
// Buffer collects what a child process or a logger writes while the test
// reads it.
package testenv
