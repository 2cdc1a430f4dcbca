package hfhub

import (
	"context"
	"fmt"
)

// AdapterFiles are the files of a LoRA adapter repository (PEFT's
// layout), in download order: its configuration, which is required, and
// its weights, in either format (one is required).
var AdapterFiles = []string{
	"adapter_config.json",
	"adapter_model.safetensors",
	"adapter_model.bin",
}

var adapterFiles = fileSet{kind: "LoRA adapter", files: AdapterFiles, missing: func(has func(string) bool) string {
	switch {
	case !has("adapter_config.json"):
		return "adapter_config.json"
	case !has("adapter_model.safetensors") && !has("adapter_model.bin"):
		return "adapter_model.safetensors or adapter_model.bin"
	}
	return ""
}}

// ResolveAdapter returns a local directory holding the LoRA adapter of
// hub repository id ("org/name") at cfg.Revision, as Resolve does for a
// model: from the cache without network access when the revision is
// there with its files, else downloaded into the cache
// ({HubCache}/models--org--name/snapshots/{commit}). Errors wrap
// ErrInvalidPath, ErrNotFound (unknown repository or revision, or no
// adapter_config.json or weights), ErrUnauthorized or ErrNotCached.
func ResolveAdapter(ctx context.Context, cfg Config, id string) (string, error) {
	if !IsHubID(id) {
		return "", fmt.Errorf("%w: %q is not a Hugging Face hub id (org/name)", ErrInvalidPath, id)
	}
	return resolveRepo(ctx, cfg, id, adapterFiles)
}
