package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/bridge"
	"github.com/dynamo-go/dynamo/pkg/hfhub"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer"
)

// nativeGGUF reports whether the worker can serve without the model's
// Hugging Face files: a llama.cpp engine that renders, tokenizes and
// detokenizes itself, whose card comes from its /props.
func nativeGGUF(dialect string, p modelcard.Processing) bool {
	return dialect == bridge.DialectLlamaCpp && p.Preprocessing == modelcard.ProcessingEngine && p.Postprocessing == modelcard.ProcessingEngine
}

// modelFromEngine checks that a worker without model files (no
// --model-path, or a GGUF file) can take its card from the engine, and
// names the model after the GGUF file when --model-name is not given
// (without either, the engine's served name).
func modelFromEngine(w *worker.Config, dialect string, p modelcard.Processing) error {
	if !nativeGGUF(dialect, p) {
		if w.ModelPath == "" {
			return nil // workerflags reported the missing --model-path
		}
		return fmt.Errorf("--model-path %s is a GGUF file: without the model's Hugging Face directory (tokenizer.json, ...) only --engine llamacpp with --native-framework-processing serves it "+
			"(the engine renders, tokenizes and detokenizes); else give the model's directory or hub id", w.ModelPath)
	}
	if w.ModelPath != "" && w.ModelName == "" {
		// The file only names the model (the engine loads it, maybe on
		// another host): qwen3-0.6b-q8_0.gguf serves as qwen3-0.6b-q8_0.
		w.ModelName = strings.TrimSuffix(filepath.Base(w.ModelPath), filepath.Ext(w.ModelPath))
	}
	if w.ChatTemplateFile != "" {
		return errors.New("--custom-jinja-template needs the model's files: with native processing the engine renders with the GGUF's template (llama-server --chat-template-file replaces it)")
	}
	return nil
}

// vocabularyOf loads the model's tokenizer from the worker's model
// directory, for the bridge's check of the engine's vocabulary.
func vocabularyOf(ctx context.Context, w worker.Config) (*bridge.Vocabulary, error) {
	dir, err := hfhub.Resolve(ctx, w.Hub, w.ModelPath)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", w.ModelPath, err)
	}
	var opts []tokenizer.Option
	if b, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json")); err == nil {
		opts = append(opts, tokenizer.WithConfig(b))
	}
	tok, err := tokenizer.FromFile(filepath.Join(dir, "tokenizer.json"), opts...)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", w.ModelPath, err)
	}
	v := &bridge.Vocabulary{Encode: func(text string) ([]uint32, error) { return tok.Encode(text, false) }}
	for _, id := range tok.SpecialTokens() {
		if s, ok := tok.IDToToken(id); ok {
			v.Special = append(v.Special, s)
		}
	}
	return v, nil
}
