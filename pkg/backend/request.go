package backend

import (
	"encoding/json"
	"time"

	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

// Request is one generation request as the frontend sends it to a worker:
// the reference system's PreprocessedRequest, with its JSON field names so
// the wire format matches. Optional fields are pointers (absent = None).
type Request struct {
	Model           string          `json:"model"`
	TokenIDs        []uint32        `json:"token_ids"`
	StopConditions  StopConditions  `json:"stop_conditions"`
	SamplingOptions SamplingOptions `json:"sampling_options"`
	OutputOptions   OutputOptions   `json:"output_options"`
	EOSTokenIDs     []uint32        `json:"eos_token_ids"`
	// MDCSum is the checksum of the model card the frontend used.
	MDCSum      string   `json:"mdc_sum,omitempty"`
	Annotations []string `json:"annotations"`
	Routing     *Routing `json:"routing,omitempty"`

	RouterConfigOverride json.RawMessage `json:"router_config_override,omitempty"`
	PrefillResult        *PrefillResult  `json:"prefill_result,omitempty"`
	BootstrapInfo        *BootstrapInfo  `json:"bootstrap_info,omitempty"`
	ExtraArgs            json.RawMessage `json:"extra_args,omitempty"`
	MultiModalData       json.RawMessage `json:"multi_modal_data,omitempty"`
	// Embedding, when set, asks for the embedding of TokenIDs (one input)
	// instead of a generation: the engine answers with one terminal
	// output carrying Output.Embedding, finish reason stop and usage
	// (prompt tokens = total tokens = len(TokenIDs)). An engine that
	// cannot embed, or cannot give the dimensions asked for, returns an
	// error wrapping ErrInvalidArgument.
	Embedding *EmbeddingOptions `json:"embedding,omitempty"`
	// MigrationLink names the engine span of the attempt this request
	// continues (the migration stage sets it from that attempt's
	// WorkerTraceLink); the worker's engine span links to it.
	MigrationLink *telemetry.Link `json:"migration_link,omitempty"`
	// MigratedTokens is how many of TokenIDs' last ids earlier attempts of
	// the request generated: the migration stage sets it when it re-issues
	// a broken stream, so that the stages after it can tell a resumed
	// request (the prefill stage sends it decode-only), and a worker that
	// postprocesses (Postprocess) can rebuild its output state from them.
	MigratedTokens int `json:"migrated_tokens,omitempty"`
	// Postprocess, when set, asks the worker to run the output side of
	// the request (the model's card says postprocessing "worker"):
	// detokenize, apply stop strings, split reasoning and parse tool calls,
	// and send Output.Postprocessed outputs. It carries what the output
	// parsers need of the OpenAI request.
	Postprocess *Postprocess `json:"postprocess,omitempty"`

	// HealthCheck marks the worker's canary request (see HealthChecker),
	// under the reference system's _HEALTH_CHECK key, so an engine can
	// tell it from real traffic (in its metrics, say). Frontends never
	// set it.
	HealthCheck bool `json:"_HEALTH_CHECK,omitempty"`

	// PromptJSON, when set, is TokenIDs already written as JSON
	// (request_json.go); not sent itself.
	PromptJSON *PromptJSON `json:"-"`
}

// Postprocess is what a worker that runs the output side needs of the
// OpenAI request (Request.Postprocess); the stop strings and stop ids are
// the request's StopConditions.
type Postprocess struct {
	// Chat marks a chat completion, whose output the model's reasoning and
	// tool-call parsers split; a completion's text is taken as it is.
	Chat bool `json:"chat,omitempty"`
	// Thinking is false when the request turned the model's thinking off
	// (chat_template_args enable_thinking false, thinking disabled).
	Thinking bool `json:"thinking,omitempty"`
	// ToolChoice is the request's tool_choice: "none", "auto",
	// "required" or "function" (ToolName names it). With "required" or
	// "function" guided decoding held the output to JSON, parsed as calls.
	ToolChoice string `json:"tool_choice,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
	// SingleToolCall keeps the first call only (parallel_tool_calls
	// false).
	SingleToolCall bool `json:"single_tool_call,omitempty"`
	// Tools are the names of the request's tools, for the tool-call
	// parser under tool_choice "auto".
	Tools []string `json:"tools,omitempty"`
}

// EmbeddingOptions shape an embedding request (Request.Embedding).
type EmbeddingOptions struct {
	// Dimensions asks for an embedding of this many dimensions (at most
	// the model's); nil means the model's own.
	Dimensions *int `json:"dimensions,omitempty"`
}

// StopConditions say when generation ends.
type StopConditions struct {
	MaxTokens *uint32  `json:"max_tokens,omitempty"`
	Stop      []string `json:"stop,omitempty"`
	// StopTokenIDs end generation; the token is not part of the output.
	StopTokenIDs []uint32 `json:"stop_token_ids,omitempty"`
	// StopTokenIDsVisible end generation; the token is part of the output.
	StopTokenIDsVisible []uint32 `json:"stop_token_ids_visible,omitempty"`
	// StopTokenIDsHidden (the model's EOS ids) end generation, hidden.
	StopTokenIDsHidden []uint32 `json:"stop_token_ids_hidden,omitempty"`
	MinTokens          *uint32  `json:"min_tokens,omitempty"`
	IgnoreEOS          *bool    `json:"ignore_eos,omitempty"`
	MaxThinkingTokens  *uint32  `json:"max_thinking_tokens,omitempty"`
}

// SamplingOptions are passed to the engine's sampler unchanged.
type SamplingOptions struct {
	N                      *int            `json:"n,omitempty"`
	BestOf                 *int            `json:"best_of,omitempty"`
	PresencePenalty        *float64        `json:"presence_penalty,omitempty"`
	FrequencyPenalty       *float64        `json:"frequency_penalty,omitempty"`
	RepetitionPenalty      *float64        `json:"repetition_penalty,omitempty"`
	Temperature            *float64        `json:"temperature,omitempty"`
	TopP                   *float64        `json:"top_p,omitempty"`
	TopK                   *int            `json:"top_k,omitempty"`
	MinP                   *float64        `json:"min_p,omitempty"`
	UseBeamSearch          *bool           `json:"use_beam_search,omitempty"`
	LengthPenalty          *float64        `json:"length_penalty,omitempty"`
	Seed                   *int64          `json:"seed,omitempty"`
	IncludeStopStrInOutput *bool           `json:"include_stop_str_in_output,omitempty"`
	GuidedDecoding         json.RawMessage `json:"guided_decoding,omitempty"`
}

// OutputOptions say what the output carries besides token ids.
type OutputOptions struct {
	Logprobs               *uint32 `json:"logprobs,omitempty"`
	PromptLogprobs         *uint32 `json:"prompt_logprobs,omitempty"`
	SkipSpecialTokens      *bool   `json:"skip_special_tokens,omitempty"`
	FormattedPrompt        *bool   `json:"formatted_prompt,omitempty"`
	ReturnTokensAsTokenIDs *bool   `json:"return_tokens_as_token_ids,omitempty"`
}

// Routing carries routing hints; a worker mostly reads DPRank.
type Routing struct {
	BackendInstanceID    *uint64 `json:"backend_instance_id,omitempty"`
	PrefillWorkerID      *uint64 `json:"prefill_worker_id,omitempty"`
	DecodeWorkerID       *uint64 `json:"decode_worker_id,omitempty"`
	DPRank               *uint32 `json:"dp_rank,omitempty"`
	PrefillDPRank        *uint32 `json:"prefill_dp_rank,omitempty"`
	ExpectedOutputTokens *uint32 `json:"expected_output_tokens,omitempty"`
	LoraName             *string `json:"lora_name,omitempty"`
	CacheSalt            *string `json:"cache_salt,omitempty"`
	Priority             *int    `json:"priority,omitempty"`
	StrictPriority       *bool   `json:"strict_priority,omitempty"`
	// PriorityJump moves the request ahead in the frontend's admission
	// queue by this many seconds (nvext.agent_hints.latency_sensitivity).
	// The frontend's alone: not part of the wire format.
	PriorityJump *float64 `json:"-"`
	// Session is the conversation the request belongs to, which the
	// frontend keeps on one worker (pkg/router/affinity). The frontend's
	// alone: not part of the wire format.
	Session *Session `json:"-"`
}

// Session is a request's session: X-Dynamo-Session-ID,
// nvext.session_control, or a conversation the frontend recognises.
type Session struct {
	ID string
	// TTL is how long the binding lasts after this turn; 0: the
	// router's --router-session-affinity-ttl.
	TTL time.Duration
	// Close ends the binding once this turn is served.
	Close bool
}

// MaxTokens returns StopConditions.MaxTokens, or def when absent.
func (r *Request) MaxTokens(def int) int {
	if r.StopConditions.MaxTokens == nil {
		return def
	}
	return int(*r.StopConditions.MaxTokens)
}

// Ptr returns a pointer to v, for the optional fields.
func Ptr[T any](v T) *T { return &v }
