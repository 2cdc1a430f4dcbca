package modelcard

import (
	"encoding/json"
	"strings"
)

// DefaultBlockSize is the KV cache block size, in tokens, that FromDir uses
// when Options.KVCacheBlockSize is zero (vLLM's default).
const DefaultBlockSize = 16

// Card is the model deployment card. JSON names follow the reference
// system's ModelDeploymentCard where it has the field; the model files are
// embedded (File) instead of referenced by path. Decoding is tolerant:
// unknown fields are kept (and re-encoded by Marshal) and missing ones take
// their zero value.
type Card struct {
	// DisplayName is the served model name: what clients send as "model".
	DisplayName string `json:"display_name"`
	// Slug is DisplayName made URL- and key-safe (lowercase, [a-z0-9_-]).
	Slug string `json:"slug"`
	// Aliases are further served names that resolve to DisplayName.
	Aliases []string `json:"aliases,omitempty"`
	// SourcePath is the Hugging Face repo id or the local directory the
	// worker loaded the model from.
	SourcePath string `json:"source_path"`
	// Revision is the hub commit the files came from, when known.
	Revision string `json:"revision,omitempty"`
	// ModelType is the set of endpoints the model serves.
	ModelType ModelType `json:"model_type"`
	// ModelInput is Tokens when the frontend tokenizes (the usual case).
	ModelInput ModelInput `json:"model_input"`
	// WorkerType is the worker's role: Aggregated, Prefill or Decode.
	WorkerType WorkerType `json:"worker_type"`
	// ContextLength is the maximum number of tokens (prompt + output); 0 if
	// unknown.
	ContextLength uint32 `json:"context_length"`
	// KVCacheBlockSize is the engine's KV block size in tokens; the KV router
	// hashes blocks of this size.
	KVCacheBlockSize uint32 `json:"kv_cache_block_size"`
	// MigrationLimit is how many times the frontend may move a request that
	// lost its worker to another one; 0 disables migration.
	MigrationLimit uint32 `json:"migration_limit"`
	// RuntimeConfig is the engine's per-instance capacity and parsers. It is
	// not covered by the checksum (it may differ between workers).
	RuntimeConfig RuntimeConfig `json:"runtime_config"`
	// TokenizerJSON is the model's tokenizer.json. Required, except on a
	// card whose engine processes both sides (see HasTokenizer and
	// FromEngine): it is then nil (JSON null).
	TokenizerJSON *File `json:"tokenizer_json"`
	// TokenizerConfigJSON is tokenizer_config.json, when the model has one.
	TokenizerConfigJSON *File `json:"tokenizer_config_json,omitempty"`
	// ConfigJSON is the model's config.json, when it has one.
	ConfigJSON *File `json:"config_json,omitempty"`
	// GenerationConfigJSON is generation_config.json, when the model has one
	// (default sampling parameters).
	GenerationConfigJSON *File `json:"generation_config_json,omitempty"`
	// ChatTemplate is the resolved chat template; nil when the model has
	// none (it can then serve completions only).
	ChatTemplate *ChatTemplate `json:"chat_template,omitempty"`
	// SpecialTokens are bos/eos/unk/pad from tokenizer_config.json.
	SpecialTokens SpecialTokens `json:"special_tokens"`
	// GenConfig holds the token ids that end generation.
	GenConfig GenConfig `json:"gen_config"`
	// Lora is set on the card of a LoRA adapter: a copy of its base
	// model's card under the adapter's name (DisplayName), published by
	// each worker that holds the adapter under the base card's key plus
	// the adapter's suffix (Record.ModelSuffix, LoraSuffix). nil on a
	// base model's card.
	Lora *Lora `json:"lora,omitempty"`
	// VocabSize is the number of tokens in the model's vocabulary as its
	// engine reports it, on a card without tokenizer.json (FromEngine);
	// 0 when unknown or when the card has the tokenizer (which knows).
	VocabSize uint32 `json:"vocab_size,omitempty"`
	// MDCSum is "sha256:<hex>" over the card's canonical encoding; set by
	// Marshal, checked by Unmarshal and Verify. See Checksum.
	MDCSum string `json:"mdc_sum,omitempty"`

	// extra holds fields this version does not know, so that a card from a
	// newer writer keeps them (and its checksum) through decode and encode.
	extra map[string]json.RawMessage
}

// RuntimeConfig is what the engine reports about one instance: capacity for
// the router and gauges, and the parsers the frontend applies to its output.
// Zero means unknown.
type RuntimeConfig struct {
	// TotalKVBlocks is the number of KV cache blocks the engine has.
	TotalKVBlocks int `json:"total_kv_blocks,omitempty"`
	// MaxNumSeqs is the engine's maximum batch size in sequences.
	MaxNumSeqs int `json:"max_num_seqs,omitempty"`
	// MaxNumBatchedTokens is the engine's token budget per step.
	MaxNumBatchedTokens int `json:"max_num_batched_tokens,omitempty"`
	// DataParallelSize is the number of data-parallel ranks behind the
	// instance (reference default 1; 0 is read as 1).
	DataParallelSize int `json:"data_parallel_size,omitempty"`
	// DataParallelStartRank is the first data-parallel rank.
	DataParallelStartRank int `json:"data_parallel_start_rank,omitempty"`
	// ToolCallParser names the tool call parser for this model's output.
	ToolCallParser string `json:"tool_call_parser,omitempty"`
	// ReasoningParser names the reasoning parser for this model's output.
	ReasoningParser string `json:"reasoning_parser,omitempty"`
	// Preprocessing says who renders the chat template and tokenizes this
	// model's chat prompts: "frontend" (or absent: the frontend, with the
	// card's template and tokenizer) or "engine" (the frontend asks a
	// worker, on its tokenize endpoint, for the engine's own tokens). See
	// docs/model-card.md, "Processing modes".
	Preprocessing string `json:"preprocessing,omitempty"`
	// Postprocessing says who runs the output side: "frontend" (or
	// absent), "worker" (the worker detokenizes, applies stop strings and
	// runs its reasoning and tool-call parsers; the frontend only frames
	// its outputs) or "engine" (the engine's own text, on which the
	// frontend applies stop strings and parsers).
	Postprocessing string `json:"postprocessing,omitempty"`
	// DisaggregatedEndpoint is where a prefill worker listens for the
	// bootstrap handoff (backend.BootstrapInfo); nil: it does not, and the
	// frontend hands its requests over synchronously.
	DisaggregatedEndpoint *DisaggregatedEndpoint `json:"disaggregated_endpoint,omitempty"`
}

// DisaggregatedEndpoint is a prefill worker's bootstrap address.
type DisaggregatedEndpoint struct {
	BootstrapHost string `json:"bootstrap_host"`
	BootstrapPort int    `json:"bootstrap_port"`
}

// GenConfig is what ends generation: the union, in this order and without
// duplicates, of generation_config.json eos_token_id (an int or a list),
// config.json eos_token_id, and the id of tokenizer_config.json eos_token.
type GenConfig struct {
	// EOSTokenIDs are the ids that stop generation (the stop set used for
	// hidden stops, unless the request asks to ignore EOS).
	EOSTokenIDs []uint32 `json:"eos_token_ids,omitempty"`
	// BOSTokenID is the beginning-of-sequence id, when known.
	BOSTokenID *uint32 `json:"bos_token_id,omitempty"`
}

// SpecialTokens are tokenizer_config.json's special tokens as plain strings
// (the file allows a string or an {"content": ...} object for each).
type SpecialTokens struct {
	BOS string `json:"bos_token,omitempty"` // beginning of sequence
	EOS string `json:"eos_token,omitempty"` // end of sequence
	UNK string `json:"unk_token,omitempty"` // unknown
	PAD string `json:"pad_token,omitempty"` // padding
}

// Names returns the names the model is served under: DisplayName first,
// then the aliases, without empty or repeated names.
func (c *Card) Names() []string {
	names := make([]string, 0, 1+len(c.Aliases))
	seen := make(map[string]bool, 1+len(c.Aliases))
	for _, n := range append([]string{c.DisplayName}, c.Aliases...) {
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		names = append(names, n)
	}
	return names
}

// Slug returns name lowercased with every character outside [a-z0-9_-]
// replaced by '_' (the reference system's slug).
func Slug(name string) string {
	b := []byte(strings.ToLower(name))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}
