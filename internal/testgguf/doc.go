// Package testgguf writes tiny random-weight language models as GGUF v3
// files, for tests that start a real llama.cpp llama-server: the model is
// fast to write and to load, generates (nonsense) tokens, and tokenizes
// exactly as the Hugging Face tokenizer it was made from.
//
//	opts, err := testgguf.FromDir("models/demo") // tokenizer.json, tokenizer_config.json, chat_template.jinja
//	opts.Seed = 1
//	err = testgguf.Write(filepath.Join(t.TempDir(), "demo.gguf"), opts)
//
// The architecture is llama.cpp's "qwen3" (default) or "llama", 2 layers
// of width 64 by default, F16 weight matrices drawn from a seeded,
// approximately normal distribution (std 0.02), F32 norms of ones, and an
// output head of its own: tied to the token embedding, weights this small
// would make the model repeat its last token. The vocabulary, merges,
// token types, special token ids, add_bos_token and chat template come
// from tokenizer.json and tokenizer_config.json, converted as llama.cpp's
// convert_hf_to_gguf.py does for byte-level BPE (GPT-2 style)
// vocabularies.
//
// Tokens that are not valid UTF-8 by themselves (and unused ids) are
// listed in tokenizer.ggml.suppress_tokens, which llama.cpp never
// samples: llama-server answers a completion whose text is not valid
// UTF-8 with HTTP 500, and a random model would produce one soon.
//
// Only byte-level BPE tokenizers whose pre-tokenization llama.cpp
// reproduces are accepted; tokenizer.ggml.pre is chosen from the
// pre_tokenizer: a plain ByteLevel with use_regex is "gpt-2", a Split on
// Qwen2's regex "qwen2", on Llama 3's "llama-bpe", on Qwen3.5's "qwen35".
// Anything else is an error wrapping ErrUnsupported that names it. An NFC
// normalizer (Qwen's) is accepted although llama.cpp does not normalize:
// the tokenizations agree on NFC text only.
//
// The package is test support and imports nothing else from this module.
package testgguf
