package modelcard

// Options says how a worker serves the model FromDir loads; its fields take
// flag values as they come (ints, strings) and FromDir validates them. The
// zero value is usable: the name comes from the model path, the model type
// from whether a chat template exists, the context length from config.json.
type Options struct {
	// Name is the served model name. Empty: Source when it is a hub id
	// ("org/name"), else the base name of the model directory.
	Name string
	// Aliases are further served names.
	Aliases []string
	// Source is what the user passed as --model-path (a hub id or a
	// directory); it becomes the card's source_path and is covered by the
	// checksum, so workers of one model should pass the same value. Empty:
	// the directory.
	Source string
	// Revision is the hub commit the directory holds, if any.
	Revision string
	// ModelTypes are the endpoints served, by name ("chat", "completions",
	// "embedding", ...; see ParseModelType). Empty: chat and completions
	// when the model has a chat template, else completions.
	ModelTypes []string
	// ModelInput is what the worker takes; "" means InputTokens.
	ModelInput ModelInput
	// DisaggregationMode is "aggregated" (or ""), "prefill" or "decode";
	// see ParseWorkerType.
	DisaggregationMode string
	// ContextLength overrides the context length from the model files; 0
	// means use config.json max_position_embeddings (or
	// text_config.max_position_embeddings, n_positions, then
	// tokenizer_config.json model_max_length).
	ContextLength int
	// KVCacheBlockSize is the engine's KV block size in tokens; 0 means
	// DefaultBlockSize.
	KVCacheBlockSize int
	// MigrationLimit is the number of migrations allowed per request; 0
	// disables migration.
	MigrationLimit int
	// Runtime is the engine's capacity and parsers, copied as is.
	Runtime RuntimeConfig
	// ChatTemplateFile is a custom Jinja chat template file
	// (--custom-jinja-template) that overrides the model's; "" for none.
	ChatTemplateFile string
}
