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
// LoRA adapters (an engine that is a backend.LoraEngine): the worker
// serves modelcard.LoraEndpoint beside its endpoint, which loads (from
// file:///DIR, an absolute directory, or hf://ORG/NAME[@REVISION] through
// the Hugging Face cache), unloads and lists adapters; each adapter held
// is published in discovery as a copy of the base card under the
// adapter's name (Card.Lora set), at the base card's key plus
// modelcard.LoraSuffix, bound to the lease. Config.Loras are loaded at
// start. A request whose Routing.LoraName names an adapter the worker
// does not hold is refused before the engine sees it. Config.MaxLoras
// bounds the adapters active in the engine: a request for a held adapter
// that is not active swaps out the least recently used one without
// requests in flight (when all have requests, the least recently used is
// drained first: its new requests wait, and it is unloaded when its last
// one ends). Metrics: dynamo_worker_lora_swaps_total and
// dynamo_worker_lora_adapters{state="held"|"active"}.
//
// Run blocks until then and owns every goroutine it starts; the runtime it
// is given must be running (rt.Run) and should outlive it, so the
// instance can drain. Errors: ErrStartFailed when the engine cannot start,
// ErrNoModelPath without a model to publish, and the runtime's errors.
package worker
