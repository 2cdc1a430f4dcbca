// Package router holds the PushRouter, the last stage of a model's
// pipeline on the frontend: a backend.Generator that picks one instance of
// an endpoint for each request with a Policy, sends it the request through
// the runtime, and streams the instance's outputs back, each stamped with
// its backend.Placement. Instances whose calls fail for an instance fault
// (runtime.IsInstanceFault: cannot connect, disconnected, an engine
// shutting down) are taken out of rotation for a while; an instance that
// refuses a request as full, or does not accept it in time
// (runtime.ErrAckTimeout), is busy, not down, and stays.
//
// The router counts what it has in flight to each instance (Load: the
// requests, and their prompt tokens until the first output), in every
// mode: the admission stage weighs saturation by it (Loads, and
// OnLoadChange when capacity frees).
//
// Policies, one file each: Random, RoundRobin, LeastLoaded (fewest
// requests in flight, then fewest prompt tokens in prefill), and Direct
// (the request names its instance). A request pinned to an instance
// (Routing.BackendInstanceID) goes there whatever the policy. KV-aware
// routing lives in the subpackage kv: it chooses an instance itself and
// sends the request with PushRouter.GenerateOn.
//
// Adding a policy is adding a type with a Pick method in its own file and
// a --router-mode value in cmd/frontend that selects it (see
// docs/architecture.md).
//
// The router does not retry; re-issuing a failed request on another
// instance is the migration stage's job, one stage up. A PushRouter is
// safe for concurrent use and owns no goroutines.
//
// Errors: ErrNoInstances when nothing is available, ErrTargetUnavailable
// for a named instance that is not, ErrNoRequestContext for a ctx without
// a runtime.Context; otherwise the runtime's typed errors from the call
// (match them with errors.Is against the runtime.Err* class sentinels).
package router
