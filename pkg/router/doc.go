// Package router holds the PushRouter: it picks one instance of an endpoint
// for each request with a Policy and calls it through the runtime, taking
// instances that fail out of rotation for a while.
//
// Policies, one file each: Random, RoundRobin, and Direct (the caller names
// the instance with WithInstance). The KV-cache-aware policy of a later
// package plugs in as another Policy, or chooses an instance itself and
// calls PushRouter.Direct.
//
// The router does not retry; re-issuing a failed request on another
// instance is the migration stage's job, one layer up. A PushRouter is safe
// for concurrent use and owns no goroutines.
//
// Errors: ErrNoInstances when nothing is available; otherwise the runtime's
// typed errors from the call (match them with errors.Is against the
// runtime.Err* class sentinels).
package router
