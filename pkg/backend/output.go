package backend

import (
	"encoding/json"
	"fmt"

	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

// Output is one streamed item of an engine: the reference system's
// LLMEngineOutput, with its JSON field names. Engines normally fill only
// TokenIDs (the frontend detokenizes) and, on the terminal output,
// FinishReason and CompletionUsage.
type Output struct {
	TokenIDs            []uint32        `json:"token_ids"`
	Tokens              []string        `json:"tokens,omitempty"`
	Text                *string         `json:"text,omitempty"`
	CumLogProbs         *float64        `json:"cum_log_probs,omitempty"`
	LogProbs            []float64       `json:"log_probs,omitempty"`
	TopLogprobs         json.RawMessage `json:"top_logprobs,omitempty"`
	FinishReason        *FinishReason   `json:"finish_reason,omitempty"`
	StopReason          json.RawMessage `json:"stop_reason,omitempty"`
	Index               *uint32         `json:"index,omitempty"`
	DisaggregatedParams json.RawMessage `json:"disaggregated_params,omitempty"`
	ExtraArgs           json.RawMessage `json:"extra_args,omitempty"`
	CompletionUsage     *Usage          `json:"completion_usage,omitempty"`
	// Embedding is the answer to an embedding request (Request.Embedding),
	// on its one terminal output.
	Embedding []float64 `json:"embedding,omitempty"`
	// Postprocessed marks an output of a worker that ran the output side
	// (Request.Postprocess): Text is the content the client sees (stop
	// strings applied; nil for none), ReasoningText the reasoning, and
	// ToolCalls the tool-call deltas; TokenIDs are the accepted ids (none
	// after a stop); a stop the worker found ends the stream with
	// FinishStop and StopReason (the stop string, or the stop token id).
	// The frontend adds only the OpenAI framing.
	Postprocessed bool `json:"postprocessed,omitempty"`
	// ReasoningText is a postprocessed output's reasoning delta.
	ReasoningText *string `json:"reasoning_text,omitempty"`
	// ToolCalls are a postprocessed output's tool-call deltas.
	ToolCalls []ToolCallDelta `json:"tool_calls,omitempty"`
	// WorkerTraceLink names the worker's engine span; the worker sets it
	// on a stream's first output, so that a later attempt of the request
	// (a migration) or its decode half can link to it.
	WorkerTraceLink *telemetry.Link `json:"worker_trace_link,omitempty"`

	// Placement is where the frontend's routing stages sent the request:
	// the push router sets it on every output it forwards, the KV router
	// adds the cached prefix it counted on. It is not part of the wire
	// format; engines leave it nil.
	Placement *Placement `json:"-"`
}

// ToolCallDelta is one tool call's part of an output, in OpenAI's shape:
// Index numbers the choice's calls from 0; ID, Type ("function") and Name
// come with a call's first delta, Arguments is a fragment of its JSON
// arguments (the whole of them when the parser emits calls whole).
type ToolCallDelta struct {
	Index     int    `json:"index"`
	ID        string `json:"id,omitempty"`
	Type      string `json:"type,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
}

// Placement is where a request was routed: the worker instance and, with
// KV-aware routing, its data-parallel rank and how much of the prompt it
// held in its cache. It answers the nvext worker_id extra field and the
// query_instance_id annotation.
type Placement struct {
	// WorkerID is the instance that serves (or would serve) the request.
	WorkerID uint64
	// DPRank is the worker's data-parallel rank, when a router chose one.
	DPRank *uint32
	// OverlapBlocks is the number of prompt blocks the worker held in its
	// cache, PromptBlocks the prompt's blocks in all (KV routing only).
	OverlapBlocks *uint32
	PromptBlocks  *int
	// PrefillWorkerID and PrefillDPRank name the prefill worker of a
	// disaggregated request (the prefill stage sets them); nil when the
	// worker that decoded also prefilled.
	PrefillWorkerID *uint64
	PrefillDPRank   *uint32
}

// Usage counts the tokens of a request.
type Usage struct {
	PromptTokens        int           `json:"prompt_tokens"`
	CompletionTokens    int           `json:"completion_tokens"`
	TotalTokens         int           `json:"total_tokens"`
	PromptTokensDetails *PromptDetail `json:"prompt_tokens_details,omitempty"`
}

// PromptDetail breaks the prompt tokens down.
type PromptDetail struct {
	CachedTokens int `json:"cached_tokens"`
}

// FinishKind is why a stream ended.
type FinishKind string

// Finish kinds and their JSON spelling.
const (
	FinishEOS           FinishKind = "eos"
	FinishLength        FinishKind = "length"
	FinishStop          FinishKind = "stop"
	FinishError         FinishKind = "error"
	FinishCancelled     FinishKind = "cancelled"
	FinishContentFilter FinishKind = "content_filter"
)

// FinishReason is why a stream ended. In JSON it is a string ("eos",
// "length", "stop", "cancelled", "content_filter") or {"error":"<msg>"}.
type FinishReason struct {
	Kind FinishKind
	// Message explains an error finish.
	Message string
}

// MarshalJSON writes the reference system's shape.
func (f FinishReason) MarshalJSON() ([]byte, error) {
	if f.Kind == FinishError {
		return json.Marshal(map[string]string{"error": f.Message})
	}
	return json.Marshal(string(f.Kind))
}

// UnmarshalJSON reads it, accepting "abort" for cancelled.
func (f *FinishReason) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		switch k := FinishKind(s); k {
		case FinishEOS, FinishLength, FinishStop, FinishCancelled, FinishContentFilter:
			*f = FinishReason{Kind: k}
		case "abort":
			*f = FinishReason{Kind: FinishCancelled}
		default:
			return fmt.Errorf("backend: unknown finish reason %q", s)
		}
		return nil
	}
	var m struct {
		Error *string `json:"error"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Error == nil {
		return fmt.Errorf("backend: bad finish reason %s", b)
	}
	*f = FinishReason{Kind: FinishError, Message: *m.Error}
	return nil
}

// String returns the kind, with the message of an error finish.
func (f FinishReason) String() string {
	if f.Kind == FinishError {
		return "error: " + f.Message
	}
	return string(f.Kind)
}

// IsTerminal reports whether o ends the stream.
func (o *Output) IsTerminal() bool { return o.FinishReason != nil }

// Tokens returns a non-terminal output carrying ids.
func Tokens(ids ...uint32) *Output { return &Output{TokenIDs: ids} }

// Finish returns a terminal output of kind k, carrying ids (may be none).
func Finish(k FinishKind, ids ...uint32) *Output {
	if ids == nil {
		ids = []uint32{}
	}
	return &Output{TokenIDs: ids, FinishReason: &FinishReason{Kind: k}}
}

// Stop returns a terminal output: a stop condition was met.
func Stop(ids ...uint32) *Output { return Finish(FinishStop, ids...) }

// EOS returns a terminal output: the model produced an end-of-sequence token.
func EOS(ids ...uint32) *Output { return Finish(FinishEOS, ids...) }

// Length returns a terminal output: max_tokens (or the context) was reached.
func Length(ids ...uint32) *Output { return Finish(FinishLength, ids...) }

// Cancelled returns the terminal output of a stopped request.
func Cancelled() *Output { return Finish(FinishCancelled) }

// Failed returns a terminal output for an engine error.
func Failed(msg string) *Output {
	return &Output{TokenIDs: []uint32{}, FinishReason: &FinishReason{Kind: FinishError, Message: msg}}
}

// WithUsage sets the usage of a terminal output and returns o.
func (o *Output) WithUsage(promptTokens, completionTokens int) *Output {
	o.CompletionUsage = &Usage{PromptTokens: promptTokens, CompletionTokens: completionTokens, TotalTokens: promptTokens + completionTokens}
	return o
}
