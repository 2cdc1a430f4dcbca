// Package migration holds the RetryManager stage: when the worker serving
// a request fails — it cannot be reached, or its stream ends without the
// final marker — the request is re-issued on another worker with the
// tokens generated so far appended to the prompt and max_tokens (and
// min_tokens) reduced by as many, so the client sees one uninterrupted
// answer. Stage is a backend.Generator: it sits between the preprocessor
// (whose decoder reads the merged stream) and the routers, and wraps the
// next stage.
//
// One budget covers both failure kinds: the first attempt plus Limit
// retries. Requests with guided decoding, n > 1 or a pinned worker are
// never migrated, nor is anything once the request was stopped or killed,
// nor errors a healthy worker reported. A worker that refuses the
// re-issue of a broken stream as busy (full, or an ack timeout) is
// skipped like an unreachable one; one that refuses a first attempt is
// not: the admission stage above queues that request again.
package migration
