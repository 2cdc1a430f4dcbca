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
// decodes each Record, and on the first instance of a model builds its
// pipeline from the card: the tokenizer from the embedded tokenizer.json, the
// chat template, the EOS ids, the context length and the KV block size.
//
// The tokenizer, tokenizer_config.json and config.json are embedded in the
// card (as File values with their SHA-256), so the frontend needs no shared
// filesystem and no hub access. A card is therefore as large as the model's
// tokenizer.json plus a few KB: from tens of KB (the demo model) to about
// 10 MB (Llama 3, 9 MB; Qwen, 7 MB). That is well inside etcd's default
// request limit of 1.5 MiB only for small tokenizers: deployments with large
// tokenizers must raise etcd's --max-request-bytes (e.g. to 32 MiB) or use the
// file/mem discovery backends. See docs/model-card.md.
//
// Integrity: Marshal sets the card's mdc_sum, "sha256:<hex>" over the
// canonical encoding of the card (see Checksum), and Unmarshal verifies it;
// a mismatch is an error wrapping ErrChecksum. The same value lets a frontend
// check that all workers serving one model agree on it.
//
// Cards are plain values: safe for concurrent reads, not for concurrent
// mutation. The package imports no other project package.
package modelcard
