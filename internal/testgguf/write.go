package testgguf

import (
	"fmt"
	"os"
	"path/filepath"
)

// weightScale is the standard deviation of the random weights: small, as
// at initialisation, so activations stay finite and logits differ.
const weightScale = 0.02

// Write writes opts' model to path as a GGUF v3 file: F16 weight
// matrices drawn from an approximately normal distribution (std 0.02)
// seeded by opts.Seed, F32 norms of ones, an output head of its own, and
// the tokenizer of opts.TokenizerJSON. The file appears at path only once
// complete. An error wraps ErrUnsupported when llama.cpp could not
// tokenize like the tokenizer.json.
func Write(path string, opts Options) error {
	o, err := opts.withDefaults()
	if err != nil {
		return err
	}
	v, err := loadVocab(o.TokenizerJSON, o.TokenizerConfigJSON)
	if err != nil {
		return err
	}
	if o.ChatTemplate != "" {
		v.chatTemplate = o.ChatTemplate
	}
	return writeFile(path, metadata(o, v), tensors(o, len(v.tokens)), newGauss(o.Seed))
}

// writeFile writes a GGUF file at path: into a temporary file beside it,
// renamed into place once complete, so that a reader never sees half of
// one.
func writeFile(path string, kvs []kv, ts []tensorInfo, g *gauss) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("testgguf: %w", err)
	}
	defer os.Remove(f.Name()) // fails harmlessly once renamed
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return fmt.Errorf("testgguf: %w", err)
	}
	err = writeGGUF(f, kvs, ts, g)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("testgguf: write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("testgguf: %w", err)
	}
	return nil
}

// metadata returns the KV pairs: general.*, the architecture's
// hyperparameters (the keys src/llama-model.cpp reads) and tokenizer.*.
func metadata(o Options, v *vocab) []kv {
	a := o.Arch + "."
	ropeBase, rmsEps := float32(1e6), float32(1e-6) // Qwen3's
	if o.Arch == "llama" {
		ropeBase, rmsEps = 500000, 1e-5 // Llama 3's
	}
	kvs := []kv{
		{"general.architecture", o.Arch},
		{"general.name", o.Name},
		{"general.alignment", uint32(ggufAlignment)},
		{"general.file_type", llamaFileTypeMostlyF16},
		{a + "vocab_size", uint32(len(v.tokens))},
		{a + "context_length", uint32(o.ContextLength)},
		{a + "embedding_length", uint32(o.Hidden)},
		{a + "block_count", uint32(o.Layers)},
		{a + "feed_forward_length", uint32(o.FFN)},
		{a + "attention.head_count", uint32(o.Heads)},
		{a + "attention.head_count_kv", uint32(o.KVHeads)},
		{a + "attention.key_length", uint32(o.HeadDim)},
		{a + "attention.value_length", uint32(o.HeadDim)},
		{a + "attention.layer_norm_rms_epsilon", rmsEps},
		{a + "rope.dimension_count", uint32(o.HeadDim)},
		{a + "rope.freq_base", ropeBase},
		{"tokenizer.ggml.model", "gpt2"},
		{"tokenizer.ggml.pre", v.pre},
		{"tokenizer.ggml.tokens", v.tokens},
		{"tokenizer.ggml.token_type", v.types},
		{"tokenizer.ggml.merges", v.merges},
	}
	for _, s := range []struct {
		key string
		id  int
	}{
		{"tokenizer.ggml.bos_token_id", v.bos},
		{"tokenizer.ggml.eos_token_id", v.eos},
		{"tokenizer.ggml.unknown_token_id", v.unk},
		{"tokenizer.ggml.padding_token_id", v.pad},
	} {
		if s.id != noToken {
			kvs = append(kvs, kv{s.key, uint32(s.id)})
		}
	}
	if sup := v.suppressed(); len(sup) > 0 {
		kvs = append(kvs, kv{"tokenizer.ggml.suppress_tokens", sup})
	}
	kvs = append(kvs,
		kv{"tokenizer.ggml.add_bos_token", v.addBOS},
		kv{"tokenizer.ggml.add_eos_token", v.addEOS},
	)
	if v.chatTemplate != "" {
		kvs = append(kvs, kv{"tokenizer.chat_template", v.chatTemplate})
	}
	return kvs
}

// tensors lists the weights llama.cpp's qwen3 or llama loader creates
// (src/models/qwen3.cpp, llama.cpp), in ggml dimension order.
func tensors(o Options, nVocab int) []tensorInfo {
	u := func(n int) uint64 { return uint64(n) }
	norm := func(name string, n int) tensorInfo {
		return tensorInfo{name: name, dims: []uint64{u(n)}, typ: ggmlTypeF32}
	}
	matrix := func(name string, ne0, ne1 int) tensorInfo {
		return tensorInfo{name: name, dims: []uint64{u(ne0), u(ne1)}, typ: ggmlTypeF16, scale: weightScale}
	}
	h, q, kvw := o.Hidden, o.Heads*o.HeadDim, o.KVHeads*o.HeadDim
	ts := []tensorInfo{
		matrix("token_embd.weight", h, nVocab),
		norm("output_norm.weight", h),
		// Not tied to token_embd (llama.cpp would fall back to it): with a
		// tied head, weights this small make the last token's own
		// embedding the best match, and the model repeats it forever.
		matrix("output.weight", h, nVocab),
	}
	for i := range o.Layers {
		blk := fmt.Sprintf("blk.%d.", i)
		ts = append(ts,
			norm(blk+"attn_norm.weight", h),
			matrix(blk+"attn_q.weight", h, q),
			matrix(blk+"attn_k.weight", h, kvw),
			matrix(blk+"attn_v.weight", h, kvw),
			matrix(blk+"attn_output.weight", q, h),
		)
		if o.Arch == "qwen3" {
			ts = append(ts, norm(blk+"attn_q_norm.weight", o.HeadDim), norm(blk+"attn_k_norm.weight", o.HeadDim))
		}
		ts = append(ts,
			norm(blk+"ffn_norm.weight", h),
			matrix(blk+"ffn_gate.weight", h, o.FFN),
			matrix(blk+"ffn_down.weight", o.FFN, h),
			matrix(blk+"ffn_up.weight", h, o.FFN),
		)
	}
	return ts
}
