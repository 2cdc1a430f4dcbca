// Package worker serves a backend.Engine as a worker of the distributed
// runtime: Run starts the engine, publishes its model card under the
// process's lease, serves the endpoint (each request decoded, handed to
// Engine.Generate, its outputs streamed back; stop and kill passed on),
// publishes the engine's KV events and serves its local KV index to
// routers, and shuts down in order when its context ends.
//
// Disaggregated serving (Config.DisaggregationMode): a prefill worker
// publishes its card with model type Prefill under the model's name, with
// the engine's bootstrap endpoint (backend.Config.BootstrapPort) as the
// runtime config's disaggregated_endpoint; a decode worker publishes the
// usual card with worker type Decode and none of its engine's KV events.
// The cards of all roles of a model share one mdc_sum.
//
// Run blocks until then and owns every goroutine it starts; the runtime it
// is given must be running (rt.Run) and should outlive it, so the
// instance can drain. Errors: ErrStartFailed when the engine cannot start,
// ErrNoModelPath without a model to publish, and the runtime's errors.
package worker
