// Package natsplane implements the NATS request plane. A worker registers a
// plane.Handler per subject (`{slug(ns_comp)}.{ep}-{id:x}`); for every
// request the server calls the handler, which only queues the work, and
// replies at once: an empty reply means "accepted", a non-empty one is the
// handler's error text. A caller sends with Client.Send and gets nil, a
// *plane.AckError, or an error (no responders, timeout, connection).
//
// # Connections
//
// Both sides take a *nats.Conn owned by the caller, who must create it with
// nats.MaxReconnects(-1) so that it reconnects forever after a NATS server
// restart; nats.go then re-subscribes the server's subjects by itself.
// Neither Server nor Client closes the connection.
//
// # Lifecycle and concurrency
//
// Server and Client are safe for concurrent use and start no goroutines of
// their own; the per-subscription delivery goroutines belong to nats.go and
// end with Unregister, Close or the connection. After Unregister (or Close)
// returns, the handler is not called again.
//
// # Errors
//
// Send wraps plane.ErrNoResponders when nobody subscribes to the subject,
// ErrTimeout when no reply came in time, and the context's error when ctx
// ended first.
package natsplane
