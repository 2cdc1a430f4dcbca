package backend

import "encoding/json"

// Disaggregated serving (docs/disaggregation.md): a prefill worker
// computes a prompt's KV cache and produces the first token; a decode
// worker takes the cache over and generates the rest. The frontend hands
// a request from one to the other in one of two ways.

// BootstrapInfo is the rendezvous of the bootstrap handoff: the prefill
// worker listens on Host:Port (its runtime config's
// disaggregated_endpoint), and the prefill and the decode request carry
// the same Room, a random id the frontend picks. The decode engine
// connects there and waits until the prefill of Room is done.
type BootstrapInfo struct {
	Host string `json:"bootstrap_host"`
	Port int    `json:"bootstrap_port"`
	Room uint64 `json:"bootstrap_room"`
}

// PrefillResult is what the synchronous handoff passes to the decode
// request: the prefill's first output's disaggregated_params (engine
// specific: where the KV cache is and how to fetch it; the mocker's names
// its worker, see DisaggregatedParams) and its prompt_tokens_details
// (cached tokens), when it had them.
type PrefillResult struct {
	DisaggregatedParams json.RawMessage `json:"disaggregated_params"`
	PromptTokensDetails json.RawMessage `json:"prompt_tokens_details,omitempty"`
}

// DisaggregatedParams is the shape of disaggregated_params that names the
// prefill worker, the part every engine's params share in the reference
// system ({"worker_id": {"prefill_worker_id": ..., "prefill_dp_rank": ...}}).
type DisaggregatedParams struct {
	WorkerID *PrefillWorker `json:"worker_id,omitempty"`
}

// PrefillWorker names the worker (and data-parallel rank) that ran a
// prefill.
type PrefillWorker struct {
	PrefillWorkerID uint64 `json:"prefill_worker_id"`
	PrefillDPRank   uint32 `json:"prefill_dp_rank"`
}
