// Package modeldir configures a mocker engine (pkg/mocker) from a model
// directory or hub id, as cmd/mocker does: the model's name and context
// length, an output vocabulary of ordinary tokens, the KV bytes per
// token of a prefill worker's transfer delay, the script of canned
// answers (the --canned-responses file) and guided decoding, and the
// tokenizers the vLLM API server (pkg/mocker/vllmapi) answers /tokenize
// with.
package modeldir
