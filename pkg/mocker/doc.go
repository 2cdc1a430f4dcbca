// Package mocker is a simulated inference engine: a backend.Engine that
// needs no GPU. It runs the classic (E1) Dynamo mocker: per data-parallel
// rank a vLLM-like scheduler (waiting, prefill and decode queues;
// admission by KV watermark, token and sequence budgets; chunked prefill;
// preemption of the oldest decoding sequence when KV blocks run out) over
// a paged KV cache with prefix caching and an LRU pool of inactive blocks.
// Each scheduler pass sleeps for the time a polynomial model says the GPU
// would take, divided by Config.SpeedupRatio. The cache publishes the same
// KV events (kvblock.RouterEvent) and per-pass load metrics
// (kvblock.LoadEvent) a real engine would, so the KV router can be tested
// against it.
//
// Output tokens are random in [1000, 2000), or, with Config.Deterministic,
// a pure function of the request's seed and the token's position (see
// DeterministicToken), which lets migration tests check that a stream
// continued on another worker is the stream that would have been.
// Fault injection (Config.ExitAfterTokens, DropAfterTokens,
// StallAfterTokens) simulates crashing, disconnecting and hanging workers.
//
// Lifecycle: New builds an Engine without starting anything. Start sleeps
// Config.StartupTime and starts one scheduler goroutine per rank; Cleanup
// stops them and waits for them (it is idempotent and safe without Start).
// Generate may be called concurrently once Start returned. All methods are
// safe for concurrent use.
//
// Errors: Generate returns errors matching backend.ErrInvalidArgument for
// requests it cannot serve (before emitting anything),
// backend.ErrEngineShutdown when the engine is not running, the request
// context's cause when the request is killed, an emit error wrapped, and
// backend.ErrDropStream for the drop fault.
package mocker
