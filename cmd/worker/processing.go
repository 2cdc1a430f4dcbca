package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dynamo-go/dynamo/cmd/internal/envflag"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/bridge"
	"github.com/dynamo-go/dynamo/pkg/hfhub"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/preprocessor"
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
			"(the frontend asks this worker, which asks the engine: vllm's /tokenize, llama.cpp's /apply-template and /tokenize; not sglang)", env("preprocessing")),
		postprocessing: s.String("postprocessing", "", "who runs the output side: frontend (default), worker (this worker: detokenization with the model's tokenizer, stop strings, "+
			"and the --dyn-reasoning-parser and --dyn-tool-call-parser; the frontend keeps only the OpenAI framing) or engine (the engine's own text: vllm's and sglang's text, llama.cpp's content)", env("postprocessing")),
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
	if dialect == bridge.DialectSGLang && p.Preprocessing == modelcard.ProcessingEngine {
		errs = append(errs, fmt.Errorf("engine preprocessing needs an engine that renders and tokenizes chat messages: vllm's /tokenize and llama.cpp's /apply-template do; %s's tokenize endpoint takes text only (use --preprocessing frontend)", dialect))
	}
	return p, errors.Join(errs...)
}

// postprocessing is the bridge engine of a worker that runs the output
// side (postprocessing "worker"): Generate passes each engine output
// through the request's preprocessor.Postprocessor (detokenization, stop
// ids and strings, min_tokens, and for chat the reasoning and tool-call
// parsers named by --dyn-reasoning-parser and --dyn-tool-call-parser), and
// stops the engine's request once a stop it found ended every choice. The
// bridge's other methods (KV events, chat tokenization, ...) are its own.
type postprocessing struct {
	*bridge.Engine
	m *preprocessor.Model
}

// errStoppedHere ends the engine's stream when the worker found a stop.
var errStoppedHere = errors.New("worker: every choice stopped")

// Generate runs req on the engine and postprocesses each output.
func (p *postprocessing) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	pp, err := p.m.NewPostprocessor(req)
	if err != nil {
		return err
	}
	err = p.Engine.Generate(ctx, req, func(o *backend.Output) error {
		outs, done, err := pp.Process(o)
		if err != nil {
			return err
		}
		for _, out := range outs {
			if err := emit(out); err != nil {
				return err
			}
		}
		if done && !o.IsTerminal() {
			return errStoppedHere // closes the engine's request, which aborts it
		}
		return nil
	})
	if errors.Is(err, errStoppedHere) {
		return nil
	}
	return err
}

// engineFor wraps eng for the card's postprocessing: the bridge itself, or
// one that runs the output side with the model's tokenizer and the
// worker's output parsers, loaded (as the frontend loads them) from the
// worker's model directory.
func engineFor(ctx context.Context, eng *bridge.Engine, wcfg worker.Config) (backend.Engine, error) {
	if wcfg.Processing.Postprocessing != modelcard.ProcessingWorker {
		return eng, nil
	}
	if !worker.HasModelFiles(wcfg.ModelPath) {
		return nil, fmt.Errorf("worker postprocessing needs the model's files (tokenizer.json): give --model-path the model's directory or hub id")
	}
	dir, err := hfhub.Resolve(ctx, wcfg.Hub, wcfg.ModelPath)
	if err != nil {
		return nil, fmt.Errorf("worker postprocessing: model %s: %w", wcfg.ModelPath, err)
	}
	card, err := modelcard.FromDir(dir, modelcard.Options{Source: wcfg.ModelPath, ChatTemplateFile: wcfg.ChatTemplateFile})
	if err != nil {
		return nil, fmt.Errorf("worker postprocessing: model %s: %w", wcfg.ModelPath, err)
	}
	card.RuntimeConfig.ToolCallParser, card.RuntimeConfig.ReasoningParser = wcfg.ToolCallParser, wcfg.ReasoningParser
	m, err := preprocessor.NewModel(card, preprocessor.Options{})
	if err != nil {
		return nil, fmt.Errorf("worker postprocessing: %w", err)
	}
	if err := m.ParserError(); err != nil {
		return nil, fmt.Errorf("worker postprocessing: %w", err)
	}
	return &postprocessing{Engine: eng, m: m}, nil
}
