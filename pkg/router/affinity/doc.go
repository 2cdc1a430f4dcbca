// Package affinity keeps a conversation on the worker that holds its KV
// cache: a session id (the X-Dynamo-Session-ID header,
// nvext.session_control, or one the frontend derives for Responses and
// Messages conversations) is bound to the worker that served the
// session's latest turn, for a time to live that each turn renews.
//
// Stage is a backend.Generator in front of the model's routing (the KV
// router, or the push router): a request of a bound session goes to its
// worker unless that worker is gone, refusing or full, in which case
// the router below picks afresh and the session is bound to where it
// went. It works in every router mode, and it never overrides a request
// that names its worker itself (nvext.backend_instance_id).
//
// Table holds the bindings of one model. Its Run sweeps expired ones and,
// when the frontend has an event plane (NATS), shares bindings with the
// model's other frontends: each publishes the bindings it makes, and
// applies the others'. The sharing is advisory: a frontend that missed
// an update routes the turn where its router picks and rebinds.
package affinity
