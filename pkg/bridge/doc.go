// Package bridge is a backend.Engine that drives a real inference engine's
// HTTP server with token ids: vLLM (POST /inference/v1/generate, its
// token-in/token-out endpoint, when Start's probe shows it streams there,
// else POST /v1/completions with a token-id prompt and return_token_ids),
// SGLang (POST /generate with input_ids) or llama.cpp (POST /completion
// with a token-array prompt and return_tokens). The frontend tokenizes and
// detokenizes; the bridge sends token ids and streams token ids back.
//
// Native processing (docs/engines.md, "Processing modes"): the Engine is a
// backend.ChatTokenizer, whose TokenizeChat renders and tokenizes a
// conversation with the engine's own template and tokenizer (vLLM's
// /tokenize with messages; llama.cpp's /apply-template, then /tokenize;
// refused for SGLang) or tokenizes a text prompt, and with
// Config.EngineText every output carries the engine's own text. A
// llama.cpp engine also reports its model (backend.Config.Native, from
// /props and /v1/models), from which a worker without the model's files
// builds its card.
//
// Lifecycle: New checks the Config and starts nothing. Start waits until
// the engine's /health answers (bounded by Config.StartTimeout), checks
// the engine's vocabulary against the card's tokenizer
// (Config.Vocabulary: a probe text tokenized by both must give the same
// ids; vocab.go) and the model it serves (one of Config.Models: fatal
// only when the vocabulary could not be checked; the model is served as
// Config.Name: the engine's name is matched, never adopted), reads its
// context length, chooses vLLM's endpoint (Config.VLLMAPI), and runs the
// KV-event source (Config.KVEvents) and the load poller (Config.LoadInterval: the
// engine's Prometheus /metrics, published as kvblock.LoadEvent per rank)
// in goroutines the Engine owns. Generate may be called concurrently,
// once per request: one engine HTTP request each. Healthy
// (backend.HealthProber) asks the engine's /health. Cleanup stops the
// KV-event source and the load poller and closes idle connections; it is
// idempotent.
//
// LoRA adapters (backend.LoraEngine; lora.go, llamacpp_lora.go,
// docs/lora.md, Engines): LoadLora and UnloadLora drive vLLM's POST
// /v1/load_lora_adapter and /v1/unload_lora_adapter and SGLang's POST
// /load_lora_adapter and /unload_lora_adapter; a request for an adapter
// (Routing.LoraName) names it as vLLM's model or SGLang's lora_path.
// llama-server loads adapters only at its start (--lora): LoadLora finds
// the one loaded from the adapter's path (or file name) and every
// request lists every adapter's scale in its lora field, the adapter's
// for a request naming it and 0 for the rest, so that a base request
// gets none however the server was started. Errors: ErrLoraUnavailable
// (the engine cannot load it), ErrLoraNotLoaded, or the engine's refusal
// (*StatusError).
//
// Stop and kill: closing the HTTP response aborts the request in all
// three engines (they abort on client disconnect). A stopped request ends
// with a FinishCancelled output; a killed one returns the context's cause.
//
// Errors: what a dialect cannot express (n > 1 on llama.cpp, a regex on
// llama.cpp, two guided kinds at once, multimodal data, ...) is refused
// before anything is sent, with an error wrapping
// backend.ErrInvalidArgument (refuse.go; docs/engines.md has the table); so is an HTTP 4xx from the engine
// (with the engine's message). An engine that cannot be reached gives
// backend.ErrCannotConnect; a stream that breaks before its end gives
// backend.ErrStreamIncomplete, which the frontend's migration stage treats
// as a dead stream and re-issues elsewhere. Start fails with ErrNotReady,
// ErrVocabMismatch or ErrModelMismatch.
package bridge
