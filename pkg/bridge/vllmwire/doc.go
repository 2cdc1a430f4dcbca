// Package vllmwire declares the JSON shapes of vLLM's token-id API, as
// each side writes them: the requests the bridge (pkg/bridge) sends to
// POST /v1/completions and POST /inference/v1/generate, and the answers a
// vLLM server streams or returns, which the mocker's vLLM server
// (pkg/mocker/vllmapi) and the bridge's fake engine (pkg/bridge/bridgetest)
// write.
//
// The field names, order and omitempty choices are the wire format: a
// change here changes what goes on the wire. A reader that must be more
// lenient than these types (the mocker validates a request's raw values
// as vLLM does, with vLLM's messages; the bridge reads both endpoints'
// chunks with one decoder) decodes its own subset of the same fields.
//
// The package imports nothing of the project.
package vllmwire

// The endpoints.
const (
	// CompletionsPath is vLLM's OpenAI completions endpoint; the bridge
	// sends the prompt as token ids (CompletionRequest).
	CompletionsPath = "/v1/completions"
	// GeneratePath is vLLM's token-in/token-out endpoint
	// (vllm/entrypoints/serve/disagg in vLLM's tree): it takes a
	// GenerateRequest, {request_id?, token_ids, sampling_params (vLLM's
	// SamplingParams), model, stream, stream_options, cache_salt,
	// priority, kv_transfer_params}, and streams GenerateStreamResponse
	// chunks, {request_id, choices: [{index, logprobs (chat shape),
	// finish_reason, token_ids}], usage}, one per engine output that has
	// new tokens (a finish comes with the last token), then with
	// include_usage a chunk with no choices and the usage, then
	// "data: [DONE]"; unstreamed, one GenerateResponse.
	GeneratePath = "/inference/v1/generate"
)
