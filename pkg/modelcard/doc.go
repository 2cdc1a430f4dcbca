// Package modelcard defines the model deployment card (MDC): everything a
// frontend on another machine needs to serve a model that a worker runs.
//
// A worker builds a Card with FromDir from a local Hugging Face model
// directory (see package hfhub for hub ids), wraps it in a Record and
// publishes it under its lease-bound discovery key
//
//	v1/mdc/{namespace}/{component}/{endpoint}/{instance_id:x}
//
// (Key, Prefix, ParseKey). The frontend lists and watches the v1/mdc/ prefix,
// decodes each Record, and on the first instance of a model fetches the
// model files and builds its pipeline from the card: the tokenizer from
// tokenizer.json, the chat template, the EOS ids, the context length and the
// KV block size.
//
// A worker whose engine renders, tokenizes and detokenizes by itself and
// has no Hugging Face files (llama.cpp serving a GGUF file) builds its card
// with FromEngine from what the engine reports (EngineModel): the card has
// no tokenizer.json (HasTokenizer is false), and its runtime config must
// say preprocessing and postprocessing "engine" (Processing.EngineOnly).
// Marshal, Unmarshal, Verify and Load refuse any other card without
// tokenizer.json (ErrMissingFile).
//
// The card names each model file (tokenizer.json, tokenizer_config.json,
// config.json, generation_config.json, the chat template's file) by path,
// size and SHA-256 (File); the contents travel out of band. Every worker
// serves them on its files endpoint (FilesEndpoint, FileRequest, FileChunk)
// and the frontend loads them with Card.Load, checking each against its
// checksum. So a card is about 1 KB whatever the model, well inside etcd's
// default request limit, and no shared filesystem or hub access is needed.
// Cards of the previous format, which embedded the contents, are still read
// (their files arrive loaded). See docs/model-card.md.
//
// Integrity: Marshal sets the card's mdc_sum, "sha256:<hex>" over the
// canonical encoding of the card (see Checksum), which covers the files
// through their checksums, and Unmarshal verifies it;
// a mismatch is an error wrapping ErrChecksum. The same value lets a frontend
// check that all workers serving one model agree on it: it covers what the
// model is, not how one worker serves it (runtime_config is left out, and
// the worker's disaggregation role, worker_type and a Prefill model_type,
// is hashed in its aggregated form), so the prefill, decode and aggregated
// workers of one model publish the same mdc_sum.
//
// Cards are plain values: safe for concurrent reads, not for concurrent
// mutation. The package imports no other project package.
package modelcard
