// Package tokenizer is a pure-Go implementation of Hugging Face
// tokenizer.json, giving the same ids as the Rust `tokenizers` library.
//
// Loading:
//
//	tok, err := tokenizer.FromFile("dir/tokenizer.json") // or FromBytes
//	tok, err := tokenizer.FromDir("dir")                 // + tokenizer_config.json
//
// Encoding follows Tokenizer::encode of the Rust library: added tokens
// (normalized:false ones on the raw text, then normalized:true ones on the
// normalized text, leftmost-longest, honouring lstrip/rstrip/single_word) ->
// normalizer per remaining segment -> pre-tokenizer -> model per word ->
// post-processor only when addSpecialTokens is true. Special tokens written
// in the input text are recognised even with addSpecialTokens=false (the
// transformers default split_special_tokens=False); callers that must not
// let users inject e.g. "<|im_start|>" have to escape their input.
//
// Models: BPE (merges by rank, leftmost among equal ranks, byte_fallback,
// ignore_merges, unk_token/fuse_unk, continuing_subword_prefix,
// end_of_word_suffix, word cache), Unigram (Viterbi, fused unknowns,
// byte_fallback), WordPiece and WordLevel; files without a model "type" are
// inferred like the Rust untagged deserializer. BPE dropout is ignored.
// Post-processors: TemplateProcessing (single sequence), BertProcessing,
// RobertaProcessing, ByteLevel (no-op for ids), Sequence. Decoders:
// ByteLevel, Metaspace, WordPiece, BPEDecoder, ByteFallback, Fuse, Strip,
// Replace, CTC, Sequence.
//
// tokenizer_config.json: transformers changes ids for LlamaTokenizer(Fast)
// and GemmaTokenizer(Fast) by rebuilding the post-processor from
// add_bos_token (default true) and add_eos_token (default false). FromDir
// applies this automatically when tokenizer_config.json exists;
// FromFile/FromBytes do so with the WithConfig(configJSON) option. Other
// classes are unaffected. clean_up_tokenization_spaces (a transformers
// decode option) is deliberately not applied: Decode returns what the Rust
// library returns, like vLLM's detokenizer.
//
// Streaming: NewDecodeStream(skipSpecialTokens, promptIDs...) returns a
// DecodeStream whose Step(id) emits text only once it is complete UTF-8
// (the prefix/read offset algorithm of Rust's DecodeStream), which handles
// byte-level tokens splitting a character, <0xNN> byte-fallback runs and
// Metaspace's leading space.
//
// Long inputs (32 KB or more) are encoded by GOMAXPROCS goroutines, cut
// only where the serial algorithm itself separates its work: around added
// tokens and, when the normalizer, the normalized added tokens and the
// pre-tokenizer allow it, before a space between ASCII letters (see
// parallel.go). The ids are the same as a serial encoding's.
//
// A Tokenizer is safe for concurrent use; a DecodeStream is not.
package tokenizer
