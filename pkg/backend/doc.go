// Package backend is the contract between the serving stack and an
// inference engine: what an engine author implements (Engine, with the
// optional capabilities Aborter, Quiescer, KVEventSource, MetricsSource,
// HealthChecker), the wire types (Request = the reference system's
// PreprocessedRequest, Output = LLMEngineOutput, FinishReason), the error
// taxonomy (the runtime's typed errors), and the Worker that serves an
// Engine on an endpoint of the distributed runtime.
//
// The stream contract: an engine emits outputs and ends with exactly one
// terminal output (one with a FinishReason), or returns an error; nothing
// after the terminal. A stopped request ends with FinishCancelled. The
// conformance kit in backendtest checks this and more; every engine should
// run it in its own tests (docs/writing-an-engine.md).
package backend
