// Package backend is the contract between the serving stack and an
// inference engine, shared by both sides of the network: Generator, the
// one shape every stage of a request's way has (the frontend's migration
// stage and routers, and engines); Engine, what an engine author
// implements, with the optional capabilities Aborter, Quiescer,
// KVEventSource, MetricsSource and HealthChecker; the wire types (Request
// = the reference system's PreprocessedRequest, Output = LLMEngineOutput,
// FinishReason); the error taxonomy (the runtime's typed errors); and the
// stream validator.
//
// The stream contract: an engine emits outputs and ends with exactly one
// terminal output (one with a FinishReason), or returns an error; nothing
// after the terminal. A stopped request ends with FinishCancelled. The
// conformance kit in backendtest checks this and more; every engine should
// run it in its own tests (docs/writing-an-engine.md).
//
// The package imports only the runtime (for its typed errors and request
// context), so the frontend's stages can use it without the worker:
// serving an Engine on an endpoint is package backend/worker's job.
package backend
