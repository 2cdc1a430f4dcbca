package testgguf

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Options describe the model to write. Zero fields take the defaults
// noted on them.
type Options struct {
	// Arch is the llama.cpp architecture: "qwen3" (default) or "llama".
	Arch string
	// TokenizerJSON is a byte-level BPE tokenizer.json (required).
	TokenizerJSON []byte
	// TokenizerConfigJSON is tokenizer_config.json (optional): its
	// bos/eos/pad/unk tokens, add_bos_token, add_eos_token and
	// chat_template.
	TokenizerConfigJSON []byte
	// Name is general.name (default "testgguf-" + Arch).
	Name string

	// Layers (default 2), Hidden (embedding width, 64), Heads (4),
	// KVHeads (2), HeadDim (16) and FFN (feed-forward width, 128) size
	// the transformer.
	Layers, Hidden, Heads, KVHeads, HeadDim, FFN int
	// ContextLength is the training context (default 4096).
	ContextLength int
	// Seed makes the weights: the same seed writes the same file.
	Seed int64
	// ChatTemplate, when set, replaces tokenizer_config's chat_template.
	ChatTemplate string
}

// FromDir reads a Hugging Face model directory's tokenizer.json and, when
// present, tokenizer_config.json and chat_template.jinja (which, as in
// the rest of this project, takes precedence over tokenizer_config's
// chat_template) into Options with the default sizes.
func FromDir(dir string) (Options, error) {
	var o Options
	var err error
	if o.TokenizerJSON, err = os.ReadFile(filepath.Join(dir, "tokenizer.json")); err != nil {
		return Options{}, fmt.Errorf("testgguf: %w", err)
	}
	if o.TokenizerConfigJSON, err = readOptional(filepath.Join(dir, "tokenizer_config.json")); err != nil {
		return Options{}, err
	}
	tmpl, err := readOptional(filepath.Join(dir, "chat_template.jinja"))
	if err != nil {
		return Options{}, err
	}
	o.ChatTemplate = string(tmpl)
	return o, nil
}

func readOptional(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("testgguf: %w", err)
	}
	return b, nil
}

// withDefaults fills zero fields and checks the shape.
func (o Options) withDefaults() (Options, error) {
	if o.Arch == "" {
		o.Arch = "qwen3"
	}
	if o.Arch != "qwen3" && o.Arch != "llama" {
		return o, fmt.Errorf("testgguf: architecture %q (want qwen3 or llama)", o.Arch)
	}
	if len(o.TokenizerJSON) == 0 {
		return o, fmt.Errorf("testgguf: Options.TokenizerJSON is required")
	}
	if o.Name == "" {
		o.Name = "testgguf-" + o.Arch
	}
	for _, f := range []struct {
		p   *int
		def int
	}{{&o.Layers, 2}, {&o.Hidden, 64}, {&o.Heads, 4}, {&o.KVHeads, 2}, {&o.HeadDim, 16}, {&o.FFN, 128}, {&o.ContextLength, 4096}} {
		if *f.p == 0 {
			*f.p = f.def
		}
		if *f.p < 0 {
			return o, fmt.Errorf("testgguf: negative size %d", *f.p)
		}
	}
	if o.Heads%o.KVHeads != 0 {
		return o, fmt.Errorf("testgguf: %d heads are not a multiple of %d KV heads", o.Heads, o.KVHeads)
	}
	if o.HeadDim%2 != 0 {
		return o, fmt.Errorf("testgguf: head dimension %d is odd (RoPE rotates pairs)", o.HeadDim)
	}
	return o, nil
}
