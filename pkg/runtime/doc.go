// Package runtime is one process's membership in a Dynamo deployment: the
// distributed runtime that frontends and workers share. It knows nothing
// about LLMs; request payloads and response items are bytes (JSON values).
//
// # Objects
//
// A DistributedRuntime (New, then Run) holds the process's discovery lease,
// whose id is the process's instance id. From it derive
// Namespace -> Component -> Endpoint. A worker serves an endpoint with
// Endpoint.Serve and a Handler; a caller gets the endpoint's Client, which
// follows discovery, and calls one instance with Client.Call (package
// router picks the instance).
//
// # Planes
//
//   - Discovery (Config.Discovery): etcd (default; one lease per process,
//     TTL 10 s), file (processes of one machine) or mem (one process). Keys:
//     v1/instances/{ns}/{component}/{endpoint}/{id:x}.
//   - Request plane (Config.RequestPlane): tcp (default; one shared
//     listener per worker, pipelined frames, FIFO acks) or nats (a subject
//     per instance). The worker acks at once and works asynchronously.
//   - Response streams: the worker dials back ("calls home") to the
//     caller's TCP server and streams two-part frames: handshake, prologue,
//     data, complete_final, sentinel. The caller's Stop and Kill travel the
//     other way on the same connection. When both sides support it
//     (negotiated per request; Config.DisableResponseMux turns it off), a
//     worker carries all its streams to one caller over one shared
//     connection, each frame tagged with its stream id, with per-stream
//     flow control: a slow consumer stalls only its own stream.
//
// docs/protocol.md describes the wire format in full.
//
// # Requests and errors
//
// Every request has a Context: a context.Context whose Done channel means
// "killed", plus a graceful Stop. The worker's handler gets a Context with
// the caller's id, and sees the caller's Stop and Kill.
//
// Errors are *Error values with a type (the reference system's
// DynamoError); they cross the network intact and match the class
// sentinels (ErrDisconnected, ErrCannotConnect, ...) with errors.Is. A
// stream that ends without its final marker is ErrDisconnected with
// MsgStreamEnded, unless the caller stopped it; IsInstanceFault tells a
// router or the migration stage that the instance, not the request, failed.
//
// # Lifecycle and concurrency
//
// New starts nothing. Run keeps the lease alive and, when its context ends,
// shuts down in order: served endpoints leave discovery, keep taking
// requests for a grace period, refuse new ones and drain in-flight ones,
// then the lease is revoked and connections close. While it is served, an
// endpoint can leave discovery and come back (Endpoint.SetHealthy, used by
// a worker's health checks) without its request plane stopping. The
// runtime owns every goroutine it starts (listeners, watches, keep-alive)
// and stops them in Close. An etcd outage of any length stops nothing:
// the runtime keeps serving and calling what it knows, and when etcd
// returns it writes its keys again, under a new lease if the old one
// expired (DiscoveryStatus reports the outage). Done is closed only if a
// back-end that cannot recover (the file store) loses its liveness: a
// worker must then stop serving. All exported methods are safe for
// concurrent use.
//
// # Securing the control plane
//
// Config.EtcdTLS, EtcdUsername and EtcdPassword, NATSTLS and NATSAuth
// encrypt and authenticate the connections to etcd and NATS
// (docs/operations.md). New keeps trying an unreachable server until
// Config.ConnectTimeout, but returns at once when a server refuses the
// credentials or the TLS handshake fails: the error wraps ErrAuthFailed or
// ErrTLS and names the settings to check.
//
// # Observability
//
// The runtime registers the dynamo_component_* work-handler metrics on the
// registry given in Deps, and serves /health, /live and /metrics when
// Config.SystemPort is set.
package runtime
