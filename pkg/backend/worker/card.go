package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/hfhub"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
)

// ErrNoModelPath is wrapped by Run's error when a worker has neither the
// model's files nor an engine that reports its model to publish a card.
var ErrNoModelPath = errors.New("no model files (--model-path)")

// buildCard builds the model card from the engine's configuration and
// the model's files (ModelPath resolved to a directory), loaded; or,
// without files (no ModelPath, or a GGUF file), from what the engine
// reports of its model (backend.Config.Native), which needs both
// processing sides in the engine.
func (w *server) buildCard(ctx context.Context, ecfg backend.Config) (*modelcard.Card, error) {
	opts := modelcard.Options{
		Name:               ecfg.Name(),
		Aliases:            ecfg.Aliases,
		Source:             w.cfg.ModelPath,
		ModelTypes:         w.modelTypes(),
		ContextLength:      ecfg.ContextLength,
		KVCacheBlockSize:   ecfg.KVBlockSize,
		MigrationLimit:     w.cfg.MigrationLimit,
		DisaggregationMode: w.cfg.DisaggregationMode,
		ChatTemplateFile:   w.cfg.ChatTemplateFile,
		Runtime: modelcard.RuntimeConfig{
			TotalKVBlocks:       ecfg.TotalKVBlocks,
			MaxNumSeqs:          ecfg.MaxNumSeqs,
			MaxNumBatchedTokens: ecfg.MaxNumBatchedTokens,
			DataParallelSize:    ecfg.DataParallelSize,
			ToolCallParser:      w.cfg.ToolCallParser,
			ReasoningParser:     w.cfg.ReasoningParser,
			Preprocessing:       w.cfg.Processing.Preprocessing,
			Postprocessing:      w.cfg.Processing.Postprocessing,

			DisaggregatedEndpoint: w.bootstrapEndpoint(ecfg),
		},
	}
	if !HasModelFiles(w.cfg.ModelPath) {
		return w.engineCard(ecfg, opts)
	}
	dir, err := hfhub.Resolve(ctx, w.cfg.Hub, w.cfg.ModelPath)
	if err != nil {
		return nil, fmt.Errorf("worker: model %s: %w", w.cfg.ModelPath, err)
	}
	card, err := modelcard.FromDir(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("worker: model card: %w", err)
	}
	return card, nil
}

// HasModelFiles reports whether a model path names Hugging Face files (a
// directory or a hub id), not nothing or a GGUF file, whose card comes
// from the engine.
func HasModelFiles(modelPath string) bool {
	return modelPath != "" && !strings.HasSuffix(strings.ToLower(modelPath), ".gguf")
}

// engineCard builds the card of a model without files from what the
// engine reports of it.
func (w *server) engineCard(ecfg backend.Config, opts modelcard.Options) (*modelcard.Card, error) {
	p := w.cfg.Processing
	if ecfg.Native == nil || p.Preprocessing != modelcard.ProcessingEngine || p.Postprocessing != modelcard.ProcessingEngine {
		what := "no --model-path"
		if w.cfg.ModelPath != "" {
			what = "--model-path " + w.cfg.ModelPath + " (a GGUF file)"
		}
		return nil, fmt.Errorf("worker: %s: %w: without the model's Hugging Face files (tokenizer.json, ...) the engine must render, tokenize and detokenize itself "+
			"(--native-framework-processing) and report its model (llama.cpp does); else give --model-path the model's directory or hub id", what, ErrNoModelPath)
	}
	if opts.ChatTemplateFile != "" {
		return nil, fmt.Errorf("worker: --custom-jinja-template needs the model's files: the engine renders with its own template here")
	}
	n := ecfg.Native
	card, err := modelcard.FromEngine(modelcard.EngineModel{
		ChatTemplate: n.ChatTemplate, BOSToken: n.BOSToken, EOSToken: n.EOSToken, EOSTokenIDs: n.EOSTokenIDs, VocabSize: n.VocabSize,
	}, opts)
	if err != nil {
		return nil, fmt.Errorf("worker: model card from the engine: %w", err)
	}
	return card, nil
}

// modelTypes are the card's model types: Prefill for a prefill worker
// (frontends use it as the model's prefill pool and never list it), else
// the configured ones.
func (w *server) modelTypes() []string {
	if w.cfg.DisaggregationMode == ModePrefill {
		return []string{"prefill"}
	}
	return w.cfg.ModelTypes
}

// bootstrapEndpoint is the card's disaggregated_endpoint: where a prefill
// engine that reported a bootstrap port listens, with the runtime's
// advertised TCP host unless the engine named one; nil otherwise.
func (w *server) bootstrapEndpoint(ecfg backend.Config) *modelcard.DisaggregatedEndpoint {
	if ecfg.BootstrapPort == 0 {
		return nil
	}
	if w.cfg.DisaggregationMode != ModePrefill {
		w.log.Warn("worker: the engine reports a bootstrap port but the worker is not a prefill worker; not published",
			"port", ecfg.BootstrapPort, "mode", w.cfg.DisaggregationMode)
		return nil
	}
	host := ecfg.BootstrapHost
	if host == "" {
		host = w.rt.Config().TCPHost
	}
	return &modelcard.DisaggregatedEndpoint{BootstrapHost: host, BootstrapPort: ecfg.BootstrapPort}
}

// publishCard writes the card under the lease. The card names its files
// by checksum; they are served by the files endpoint, which must be up
// first.
func (w *server) publishCard(ctx context.Context, card *modelcard.Card) (string, error) {
	ep := w.cfg.Endpoint
	rec, err := modelcard.NewRecord(ep.Namespace, ep.Component, ep.Name, w.rt.InstanceID(), card)
	if err != nil {
		return "", fmt.Errorf("worker: model card: %w", err)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return "", fmt.Errorf("worker: model card record: %w", err)
	}
	key := rec.Key()
	if err := w.rt.Store().Put(ctx, key, b); err != nil {
		return "", fmt.Errorf("worker: publish model card: %w", err)
	}
	w.log.Info("worker: model card published", "key", key, "bytes", len(b), "files", len(card.Files()), "file_bytes", card.Size())
	return key, nil
}
