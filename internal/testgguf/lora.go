package testgguf

import (
	"fmt"
)

// LoraOptions describe a LoRA adapter for a model Write writes. Zero
// fields take the defaults noted on them.
type LoraOptions struct {
	// Rank is the adapter's rank r (default 8).
	Rank int
	// Alpha is adapter.lora.alpha; llama.cpp scales the update B·A by
	// alpha/r (default Rank: by 1).
	Alpha float32
	// Std is the standard deviation of lora_a's and lora_b's random
	// values (default 0.5): the update then outweighs the model's own
	// weights (std 0.02) and changes its greedy answers.
	Std float32
	// Targets are the model's weight matrices adapted (default
	// "output.weight", the output head). token_embd.weight, which
	// llama.cpp adapts with A and B swapped, is not supported.
	Targets []string
	// Seed makes the values: the same seed writes the same file.
	Seed int64
}

// WriteLora writes a LoRA adapter for the model opts describes (the
// same architecture and sizes as Write's) to path as a GGUF v3 file, in
// the form llama.cpp's llama_adapter_lora_init loads (--lora):
// general.type "adapter", adapter.type "lora", adapter.lora.alpha, and
// for each target W of ggml shape [in, out] the F16 pair W.lora_a [in, r]
// and W.lora_b [r, out]. The file appears at path only once complete.
func WriteLora(path string, opts Options, lo LoraOptions) error {
	o, err := opts.withDefaults()
	if err != nil {
		return err
	}
	v, err := loadVocab(o.TokenizerJSON, o.TokenizerConfigJSON)
	if err != nil {
		return err
	}
	if lo.Rank == 0 {
		lo.Rank = 8
	}
	if lo.Alpha == 0 {
		lo.Alpha = float32(lo.Rank)
	}
	if lo.Std == 0 {
		lo.Std = 0.5
	}
	if len(lo.Targets) == 0 {
		lo.Targets = []string{"output.weight"}
	}
	if lo.Rank < 0 || lo.Std < 0 {
		return fmt.Errorf("testgguf: LoRA rank %d and std %v must not be negative", lo.Rank, lo.Std)
	}
	base := map[string]tensorInfo{}
	for _, t := range tensors(o, len(v.tokens)) {
		base[t.name] = t
	}
	var ts []tensorInfo
	for _, name := range lo.Targets {
		t, ok := base[name]
		switch {
		case !ok:
			return fmt.Errorf("testgguf: LoRA target %q is not a tensor of the %s model", name, o.Arch)
		case len(t.dims) != 2 || name == "token_embd.weight":
			return fmt.Errorf("testgguf: LoRA target %q is not a weight matrix the writer adapts", name)
		}
		r := uint64(lo.Rank)
		ts = append(ts,
			tensorInfo{name: name + ".lora_a", dims: []uint64{t.dims[0], r}, typ: ggmlTypeF16, scale: lo.Std},
			tensorInfo{name: name + ".lora_b", dims: []uint64{r, t.dims[1]}, typ: ggmlTypeF16, scale: lo.Std},
		)
	}
	kvs := []kv{
		{"general.architecture", o.Arch},
		{"general.type", "adapter"},
		{"general.name", o.Name + "-lora"},
		{"general.alignment", uint32(ggufAlignment)},
		{"adapter.type", "lora"},
		{"adapter.lora.alpha", lo.Alpha},
	}
	return writeFile(path, kvs, ts, newGauss(lo.Seed))
}
