// Package prefill owns the prefill stage of disaggregated serving: for a
// model that has prefill workers, it sends each request's prompt to a
// prefill worker first (max_tokens 1), then hands the request over to the
// decode workers, which generate the rest without computing the prompt's
// KV cache again (docs/disaggregation.md).
//
// The Stage is a backend.Generator between the migration stage and the
// decode router:
//
//	migration.Stage -> prefill.Stage -> [kv.Router] -> router.PushRouter
//
// It is inactive (requests go straight on to the decode router) while the
// model has no prefill workers; the owner of the model's chain
// (pkg/pipeline) attaches the model's prefill workers with SetPool as they
// come and go. Two handoffs are supported: bootstrap (the prefill worker
// publishes a bootstrap endpoint; the prefill runs in the background and
// the decode request, which carries the same room id, is sent at once)
// and synchronous (the decode request carries the prefill's result).
//
// # Lifecycle
//
// A Stage starts no goroutine of its own: the background prefill of a
// bootstrap handoff belongs to its request, and Generate returns only
// after it has. A Stage is safe for concurrent use.
//
// # Errors
//
// With Config.Enforce, a request of a model without prefill workers fails
// with ErrNoPrefillWorkers (which matches router.ErrNoInstances: HTTP 503),
// and a failed prefill fails the request with the prefill's error.
// Otherwise both fall back to decode-only: the decode worker prefills.
package prefill
