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
// A request that asks for logprobs (output_options.logprobs = k) gets, on
// every token, its logprob and its k most likely alternatives headed by
// it: a valid distribution, a pure function of the seed and the position
// (logprobs.go).
//
// A request with sampling_options.n = k > 1 (at most MaxChoices) runs k
// sequences of its prompt, each scheduled, preempted and counted against
// MaxNumSeqs like a request of its own while they share the prompt's full
// blocks; every output carries its choice's Index and each choice ends
// with its own terminal output and usage. Choice i draws its tokens with
// ChoiceSeed(seed, i), and choice 0 is the n = 1 answer.
//
// Config.Script scripts answers: a choice it answers emits exactly the
// given ids, with the usual timing (cmd/mocker's --canned-responses, and
// the guided decoding a request asks for: SchemaInstance, GuidedText).
//
// LoRA adapters (backend.LoraEngine, lora.go): LoadLora takes
// Config.LoraLoadTime (divided by SpeedupRatio) and wants a directory
// with LoraConfigFile; a request whose Routing.LoraName names a loaded
// adapter draws its tokens with LoraSeed (each adapter answers its own
// way; the base model's answers are unchanged) and hashes its blocks with
// LoraHashSeed (kvblock.SaltedSeed of the adapter), in the cache and in
// the KV events (KVEvent.LoraName names the adapter for a batch
// publisher), so no prefix is shared across adapters. A request for an
// adapter not loaded is refused.
//
// Fault injection (Config.ExitAfterTokens, DropAfterTokens,
// StallAfterTokens) simulates crashing, disconnecting and hanging workers.
//
// # Disaggregated serving
//
// Config.DisaggregationMode gives the engine a role (the reference
// system's §6.8 disaggregated mocker):
//
//   - ModeAggregated (the default) prefills and decodes.
//   - ModePrefill generates one token whatever max_tokens says, and
//     answers with a single output: that token, finish reason length,
//     usage, and disaggregated_params
//     {"worker_id":{"prefill_worker_id":<worker id>,"prefill_dp_rank":<rank>}}
//     (backend.DisaggregatedParams). Between the prefill pass that makes
//     the token and the answer it sleeps the KV transfer time, prompt
//     tokens · Config.KVBytesPerToken / Config.KVTransferBandwidth
//     (divided by SpeedupRatio like every mocker time): the transfer comes
//     before the answer, so the decode side, whichever handoff the
//     frontend uses, starts when the cache would have arrived. With
//     Config.BootstrapAddr it runs a bootstrap server (started by Start,
//     which reports its port as backend.Config.BootstrapPort, and stopped
//     by Cleanup): a request carrying backend.BootstrapInfo marks its room
//     done just before the answer, or failed when it ends otherwise.
//   - ModeDecode takes a request carrying backend.PrefillResult or
//     backend.BootstrapInfo as handed over: its prompt's KV blocks are
//     allocated as transferred, with no prefill time (and no hit-rate
//     sample). With BootstrapInfo it first connects to the prefill
//     engine's bootstrap server, sends the room id (8 bytes, little
//     endian) and waits for the ACK byte 0x01 (30 s each; a killed
//     request returns at once, a stopped one ends cancelled, a failure is
//     an error wrapping ErrBootstrap). A request with neither is
//     prefilled in full, as an aggregated engine would (decode-only
//     fallback). A decode engine records no KV events; load metrics are
//     published as in every mode.
//
// KVBytesPerToken computes the per-token KV size from a model's
// config.json.
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
// context's cause when the request is killed, an emit error wrapped,
// backend.ErrDropStream for the drop fault, and ErrBootstrap when a
// decode request's bootstrap handoff fails.
package mocker
