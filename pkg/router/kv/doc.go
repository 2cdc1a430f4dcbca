// Package kv is KV-cache-aware routing: an indexer of which worker holds
// which prompt blocks (a radix tree over block hashes), a scheduler that
// weighs prefix overlap against load, and tracking of the load each routed
// request adds.
//
// # Routing one request
//
// The caller hashes the prompt into blocks (package kvblock), asks the
// indexer for the OverlapScores of those blocks, asks Sequences for the
// active load of every worker (Sequences.Loads), and hands all of it to
// Scheduler.Select, which returns the chosen Worker (worker id and
// data-parallel rank), its overlap in blocks and the cost of every
// candidate. The cost of a candidate is the reference system's E1 formula
//
//	logit = overlap_score_weight · prefill_blocks + decode_blocks
//
// where prefill_blocks counts the worker's queued prompt tokens plus the
// tokens of this request it has not cached, in (fractional) blocks, and
// decode_blocks the KV blocks the worker would hold with this request
// added. Lower is better. At temperature 0 the cheapest worker wins; above
// 0 a worker is sampled from a softmax over the normalised costs.
//
// After the choice the caller registers the request with Sequences.Add,
// calls Sequences.MarkPrefillCompleted at the first output token and
// Sequences.Free when the stream ends or is dropped. Several router
// replicas can share that bookkeeping through SequenceEvent values
// (Sequences publishes them through a hook and applies peers' with
// Sequences.Apply); the transport is the caller's.
//
// LoadMonitor ingests the workers' load metrics (kvblock.LoadEvent) and the
// routers' ActiveLoad and tells the scheduler which workers are busy; busy
// workers are skipped, and when every candidate is busy Select fails with
// ErrAllWorkersBusy. RouterMetrics holds the router's Prometheus metrics.
//
// # Concurrency and lifecycle
//
// Scheduler, Sequences, LoadMonitor and RouterMetrics are safe for
// concurrent use and own no goroutines. Hooks (SequencesDeps) run on the
// caller's goroutine.
//
// # Errors
//
// Select returns ErrNoWorkers when it has no candidate and an error
// matching both ErrAllWorkersBusy and runtime.ErrWorkerOverloaded when
// every candidate is busy. Sequences.Add returns ErrDuplicateRequest for a
// request id that is already active.
package kv
