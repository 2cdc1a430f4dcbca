// Package kv is KV-cache-aware routing: an indexer of which worker holds
// which prompt blocks (a radix tree over block hashes), a scheduler that
// weighs prefix overlap against load, and tracking of the load each routed
// request adds.
//
// # One model's routing
//
// Router assembles the parts for one served model and is what the
// frontend's model registry (package pipeline) builds: a backend.Generator
// stage in front of the push router, with Decide for routing queries
// (where would this request go, changing nothing), AddWorker (which loads
// a joining worker's index) and RemoveWorker for discovery's news, and a
// blocking Run that owns the event-plane subscriptions (KV events, load
// metrics, replica sync) and the approximate index's expiry.
// Its outputs carry a backend.Placement with the chosen worker, its dp
// rank and its cached prefix.
//
// # Routing one request
//
// The caller hashes the prompt into blocks (package kvblock), asks the
// indexer which workers hold how much of them (indexer.FindMatchesInto,
// into a matches the caller reuses, so that matching allocates nothing;
// FindMatches returns the same as overlapScores maps), asks sequences for
// the active load of every worker (sequences.Loads), and hands all of it
// to scheduler.Select, which returns the chosen Worker (worker id and
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
// After the choice the caller registers the request with sequences.Add,
// calls sequences.MarkPrefillCompleted at the first output token and
// sequences.Free when the stream ends or is dropped. Several router
// replicas can share that bookkeeping through sequenceEvent values
// (sequences publishes them through a hook and applies peers' with
// sequences.Apply); the transport is the caller's.
//
// LoadMonitor ingests the workers' load metrics (kvblock.LoadEvent) and the
// routers' activeLoad and tells the scheduler which workers are busy; busy
// workers are skipped, and when every candidate is busy Select fails with
// errAllWorkersBusy. routerMetrics holds the router's Prometheus metrics.
//
// # Concurrency and lifecycle
//
// Router, its routing stage, scheduler, sequences, LoadMonitor and Metrics are safe for
// concurrent use. Only Router.Run, approxIndexer.Run (which Router.Run
// runs) and the event plane's subscription callbacks run goroutines of
// their own; nothing starts one in a constructor. Hooks (sequencesDeps)
// run on the caller's goroutine.
//
// # Errors
//
// Select returns errNoWorkers when it has no candidate (Decide then
// returns router.ErrNoInstances) and an error
// matching both errAllWorkersBusy and runtime.ErrWorkerOverloaded when
// every candidate is busy. sequences.Add returns errDuplicateRequest for a
// request id that is already active.
package kv
