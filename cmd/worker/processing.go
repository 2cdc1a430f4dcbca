package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dynamo-go/dynamo/internal/envflag"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/bridge"
	"github.com/dynamo-go/dynamo/pkg/hfhub"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/preprocessor"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer"
)

// processingFlags choose who renders and tokenizes the model's prompts
// and who detokenizes its output (published on the model card).
type processingFlags struct {
	set            *envflag.Set
	native         *bool
	vllm           *bool
	sglang         *bool
	preprocessing  *string
	postprocessing *string
}

func registerProcessing(s *envflag.Set) *processingFlags {
	env := func(name string) string { return "DYN_WORKER_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")) }
	return &processingFlags{
		set: s,
		native: s.Bool("native-framework-processing", false, "use the engine's own chat template and tokenizer for prompts and its own detokenizer for output "+
			"(--preprocessing engine --postprocessing engine); the frontend still builds the OpenAI responses, applies stop strings and runs the tool-call and reasoning parsers", env("native-framework-processing")),
		vllm:   s.Bool("vllm-processing", false, "--native-framework-processing for --engine vllm", env("vllm-processing")),
		sglang: s.Bool("sglang-processing", false, "--native-framework-processing for --engine sglang (refused: SGLang's tokenize endpoint takes no messages)", env("sglang-processing")),
		preprocessing: s.String("preprocessing", "", "who renders the chat template and tokenizes: frontend (default: the frontend, with the model's files) or engine "+
			"(the frontend asks this worker, which asks the engine's /tokenize; vllm only)", env("preprocessing")),
		postprocessing: s.String("postprocessing", "", "who detokenizes the output: frontend (default), worker (this worker, with the model's tokenizer) or engine (the engine's own text: vllm's and sglang's text, llama.cpp's content)", env("postprocessing")),
	}
}

// processing returns the modes the flags choose for the engine dialect.
func (f *processingFlags) processing(dialect string) (modelcard.Processing, error) {
	native := *f.native
	var errs []error
	for _, alias := range []struct {
		set     bool
		name    string
		dialect string
	}{{*f.vllm, "--vllm-processing", bridge.DialectVLLM}, {*f.sglang, "--sglang-processing", bridge.DialectSGLang}} {
		if !alias.set {
			continue
		}
		if dialect != alias.dialect {
			errs = append(errs, fmt.Errorf("%s needs --engine %s (this is --engine %q): use --native-framework-processing", alias.name, alias.dialect, dialect))
		}
		native = true
	}
	p := modelcard.Processing{Preprocessing: *f.preprocessing, Postprocessing: *f.postprocessing}
	if native {
		for _, c := range []struct {
			name string
			v    *string
		}{{"--preprocessing", &p.Preprocessing}, {"--postprocessing", &p.Postprocessing}} {
			if *c.v != "" && *c.v != modelcard.ProcessingEngine {
				errs = append(errs, fmt.Errorf("native framework processing is engine processing: %s %s contradicts it", c.name, *c.v))
			}
			*c.v = modelcard.ProcessingEngine
		}
	}
	if err := p.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("--preprocessing/--postprocessing: %w", err))
	}
	if dialect != bridge.DialectVLLM && dialect != "" && p.Preprocessing == modelcard.ProcessingEngine {
		errs = append(errs, fmt.Errorf("engine preprocessing needs an engine that tokenizes chat messages: vllm's /tokenize does; %s's takes text only (use --preprocessing frontend)", dialect))
	}
	return p, errors.Join(errs...)
}

// detokenizing is the bridge engine of a worker that detokenizes its
// outputs (postprocessing "worker"): Generate sets each output's Text with
// the model's tokenizer. The bridge's other methods (KV events, chat
// tokenization, ...) are its own.
type detokenizing struct {
	*bridge.Engine
	tok *tokenizer.Tokenizer
}

// Generate runs req on the engine and fills each output's text.
func (d *detokenizing) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	fill := preprocessor.NewTextFiller(d.tok, req)
	return d.Engine.Generate(ctx, req, func(o *backend.Output) error {
		if err := fill.Fill(o); err != nil {
			return err
		}
		return emit(o)
	})
}

// engineFor wraps eng for the card's postprocessing: the bridge itself, or
// one that detokenizes with the model's tokenizer, loaded (as the frontend
// loads it) from the worker's model directory.
func engineFor(ctx context.Context, eng *bridge.Engine, wcfg worker.Config) (backend.Engine, error) {
	if wcfg.Processing.Postprocessing != modelcard.ProcessingWorker {
		return eng, nil
	}
	dir, err := hfhub.Resolve(ctx, wcfg.Hub, wcfg.ModelPath)
	if err != nil {
		return nil, fmt.Errorf("worker postprocessing: model %s: %w", wcfg.ModelPath, err)
	}
	card, err := modelcard.FromDir(dir, modelcard.Options{Source: wcfg.ModelPath, ChatTemplateFile: wcfg.ChatTemplateFile})
	if err != nil {
		return nil, fmt.Errorf("worker postprocessing: model %s: %w", wcfg.ModelPath, err)
	}
	m, err := preprocessor.NewModel(card, preprocessor.Options{})
	if err != nil {
		return nil, fmt.Errorf("worker postprocessing: %w", err)
	}
	return &detokenizing{Engine: eng, tok: m.Tokenizer()}, nil
}
