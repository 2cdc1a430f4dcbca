// Package vllmapi serves the mocker engine as a vLLM server: the
// OpenAI-compatible HTTP API of `vllm serve` with token ids in and out,
// and vLLM's ZeroMQ KV event stream. It lets a worker that drives a vLLM
// HTTP server (cmd/worker --engine vllm) be tested end to end against a
// real process with the mocker's timing, without a GPU. No Dynamo runtime
// is involved: nothing registers, nothing is discovered.
//
// # HTTP
//
//   - GET /health: 200 with an empty body once the engine has started
//     (after Config.StartupTime), 503 before and while shutting down.
//   - GET /v1/models: {"object":"list","data":[{"id","object":"model",
//     "created","owned_by":"vllm","root","parent":null,"max_model_len",
//     "permission":[...]}]}.
//   - GET /metrics: Prometheus text with vLLM's names, each series
//     labelled model_name and engine="0": vllm:num_requests_running
//     (sequences prefilling or decoding), vllm:num_requests_waiting,
//     vllm:kv_cache_usage_perc (and its deprecated name
//     vllm:gpu_cache_usage_perc) in [0, 1], vllm:num_preemptions_total,
//     vllm:prompt_tokens_total, vllm:generation_tokens_total,
//     vllm:request_success_total{finished_reason}, vllm:cache_config_info.
//   - POST /tokenize {"prompt","add_special_tokens"} or {"messages","tools",
//     "add_generation_prompt","continue_final_message","chat_template_kwargs"}
//     (rendered with the model's chat template, Config.TokenizeChat) and POST /detokenize
//     {"tokens"}, when the server has a tokenizer (else 501).
//   - POST /v1/completions and POST /inference/v1/generate: see below.
//   - POST /v1/load_lora_adapter {"lora_name","lora_path"} and POST
//     /v1/unload_lora_adapter {"lora_name"}: vLLM's runtime LoRA
//     endpoints (lora.go), through the engine's backend.LoraEngine (400
//     when it has none; 400 for a name loaded twice, 404 for an unknown
//     one on unload); a text answer on success. A loaded adapter is
//     listed by /v1/models with parent (the served model) and served by
//     name: a request whose model is the adapter reaches the engine with
//     Routing.LoraName set, and the answers carry its name.
//     Other paths: 404.
//
// A completion request's prompt is a list of token ids (or a list of one
// such list); a string, when the server has a tokenizer. It is mapped to
// one backend.Request for the engine: max_tokens (default 16, vLLM's;
// prompt + max_tokens must fit max_model_len), min_tokens, ignore_eos,
// stop_token_ids, n, temperature, top_p, top_k, min_p, seed, penalties,
// logprobs (0..20), skip_special_tokens, structured_outputs (vLLM's
// StructuredOutputsParams, one constraint kind: it becomes the engine's
// guided decoding, whose json and choice the engine's script honours,
// mocker.GuidedText; json_object is a schema of any object; regex,
// grammar and structural_tag are accepted and not applied). The model's
// EOS ids end a choice unless ignore_eos. Stop strings (stop, with
// include_stop_str_in_output) are applied to the text as vLLM does: the
// text ends before the stop string (after it with
// include_stop_str_in_output), finish_reason "stop" with the string as
// stop_reason, and the engine's request is stopped once every choice
// ended; they need a tokenizer and detokenize (else 400).
// return_token_ids, return_tokens_as_token_ids, detokenize, stream and
// stream_options (include_usage, continuous_usage_stats) shape the
// answer. echo, suffix and several prompts per request are refused
// (400). The X-data-parallel-rank header (vLLM's) runs the request on
// that data-parallel rank (400 for a rank the engine lacks). Unknown fields are ignored. Errors are vLLM's ErrorResponse,
// {"error":{"message","type","param","code"}}: 400 BadRequestError for bad
// values, 404 NotFoundError for another model name.
//
// A streamed answer is text/event-stream; headers go out at once. Each
// engine output becomes one chunk
//
//	data: {"id":"cmpl-…","object":"text_completion","created":…,"model":…,
//	       "choices":[{"index":i,"text":…,"logprobs":…,"finish_reason":null,
//	                   "stop_reason":null,"prompt_token_ids":…,"token_ids":[…]}],
//	       "usage":null}
//
// (prompt_token_ids on the first chunk of each choice, null after;
// token_ids with return_token_ids, null without; text when the server has
// a detokenizer and detokenize is not false, else ""). The mocker ends a
// choice with an output of its own, so the finish_reason ("stop",
// "length", "abort") comes in a last chunk of the choice with text "" and
// token_ids []. stop_reason is the stop token id when a stop_token_ids
// entry (not an EOS id) ended the choice, else null; the stop or EOS token
// is part of token_ids, as in vLLM. Then, with include_usage, a chunk
// with "choices":[] and usage {prompt_tokens, total_tokens,
// completion_tokens}, then "data: [DONE]". An engine failure after the
// headers is a data: {"error":…} event before [DONE]. A unary answer is
// vLLM's CompletionResponse, with prompt_token_ids and token_ids per
// choice under return_token_ids.
//
// POST /inference/v1/generate is vLLM's token-in/token-out endpoint
// (vllm/entrypoints/serve/disagg): a GenerateRequest {request_id, model,
// token_ids, sampling_params, stream, stream_options, cache_salt,
// priority} whose sampling_params (vLLM's SamplingParams) hold the same
// fields as a completion request's, and without max_tokens the answer may
// fill the context (vLLM's server-side default there). Streamed, it
// answers as vLLM's ServingTokens does: one chunk
//
//	data: {"request_id":"generate-tokens-…","choices":[{"index":i,"logprobs":…,
//	       "finish_reason":null|"stop"|"length"|"abort","token_ids":[…],"routed_experts":null}],"usage":null}
//
// per output with new tokens (no text; logprobs in the chat shape
// {"content":[{"token":"token_id:<id>","logprob","bytes","top_logprobs"}]}),
// the finish_reason on the chunk of a choice's last tokens (the engine
// ends a choice with an output of its own, so each choice's chunk is held
// until its next output: a chunk leaves one engine step late), then with
// include_usage {"request_id","choices":[],"usage":{...}}, then "data:
// [DONE]". Unary, a GenerateResponse {request_id, choices: [{index,
// logprobs, finish_reason, token_ids}], prompt_logprobs: null,
// kv_transfer_params: null, usage}.
//
// The answers of both endpoints are written with the shapes of
// pkg/bridge/vllmwire, the ones the bridge reads; requests are read here,
// field by field, to check their values as vLLM does.
//
// The request runs under a runtime.Context (id "cmpl-" + X-Request-Id or
// a random hex UUID) tied to the HTTP request: when the client closes
// the connection, the engine's Generate sees the context killed and frees
// the request's sequences at once.
//
// # KV events
//
// With KVEventsConfig.Port >= 0 the server mirrors vLLM's
// ZmqEventPublisher. A PUB socket (bound, tcp://HOST:PORT) sends one
// three-frame message per scheduler pass that changed the KV cache:
//
//	[topic (KVEventsConfig.Topic, default empty), seq (uint64, 8 bytes big-endian, from 0, +1 per message), payload]
//
// The payload is a msgpack KVEventBatch as msgspec encodes it: the batch
// is array_like, [ts (float64 Unix seconds), events, data_parallel_rank
// (int, the rank)]. With the default EncodingMap each event is a map
// tagged by "type" (vLLM's KVCacheEvent, tag=True, omit_defaults), keys
// in this order:
//
//	{"type":"BlockStored", "block_hashes":[uint…], "parent_block_hash":uint|nil,
//	 "token_ids":[uint…], "block_size":int, "lora_id":nil, "medium":"GPU", "lora_name":nil}
//	{"type":"BlockRemoved", "block_hashes":[uint…], "medium":"GPU"}
//	{"type":"AllBlocksCleared"}
//
// (the optional fields extra_keys, group_idx, kv_cache_spec_kind and
// kv_cache_spec_sliding_window are absent, as msgspec omits them at their
// default None). EncodingArray writes the legacy array_like events
// instead: ["BlockStored", block_hashes, parent_block_hash, token_ids,
// block_size, nil, "GPU", nil], ["BlockRemoved", block_hashes, "GPU"],
// ["AllBlocksCleared"]. Integers take their smallest msgpack form.
//
// Block hashes are the mocker's own 64-bit chained block hashes
// (kvblock.SeqHash), sent as unsigned integers, vLLM's default integer
// form (never bytes). A BlockStored event covers a run of consecutive
// newly cached full blocks; token_ids are those blocks' ids, block_size
// per block, so a subscriber can compute its own block hashes, and
// parent_block_hash is the block before the run (nil at the start of a
// sequence). Each evicted block is one BlockRemoved.
//
// With KVEventsConfig.ReplayPort >= 0 a ROUTER socket answers replay
// requests as vLLM's _service_replay does: a DEALER sends [empty frame,
// start seq (8 bytes big-endian)]; the answer is one message [empty, seq,
// payload] per kept batch with a sequence number >= start, oldest first,
// then the end marker [empty, 0xffffffffffffffff (-1), empty]. The last
// KVEventsConfig.BufferSteps batches (default 10000) are kept.
//
// As vLLM runs one publisher per data-parallel rank, the server runs one
// per rank of the engine (mocker.Config.DPSize): rank r's PUB socket is
// on KVEventsConfig.Port + r and its replay socket on ReplayPort + r
// (vLLM's offset_endpoint_port), each with its own sequence numbers and
// replay buffer, every batch stamped with data_parallel_rank r. A port of
// 0 picks free consecutive ports, so that rank r is still on rank 0's
// port + r. A request's X-data-parallel-rank header (vLLM's) pins it to
// that rank.
package vllmapi
