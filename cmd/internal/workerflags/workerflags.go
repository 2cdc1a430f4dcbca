// Package workerflags registers the command-line flags every worker binary
// shares (model, endpoint, migration limit, disaggregation mode, the
// Hugging Face hub settings) and folds them, with the runtime's flags and
// environment, into a worker.Config and a runtime.Config. It reads
// the environment only through the lookup function main passes in.
package workerflags

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dynamo-go/dynamo/internal/runtimeflags"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/hfhub"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/reasoning"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/toolcall"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// Flags holds the registered flags until Configs is called.
type Flags struct {
	// ModelPathOptional, set before Configs, lets --model-path be left
	// out (a worker whose engine reports its model: cmd/worker with a
	// llama.cpp engine in native processing).
	ModelPathOptional bool

	fs             *flag.FlagSet
	env            func(string) string
	namespace      string
	runtime        *runtimeflags.Flags
	modelPath      *string
	modelName      *string
	endpoint       *string
	migrationLimit *int
	mode           *string
	isPrefill      *bool
	isDecode       *bool
	revision       *string
	chatTemplate   *string
	toolParser     *string
	reasonParser   *string
	loraAdapters   *string
	maxLoras       *int
	envErrs        []error // variables that do not parse
}

// Register adds the worker flags and the runtime flags to fs.
func Register(fs *flag.FlagSet, env func(string) string) *Flags {
	ns := env("DYN_NAMESPACE")
	if ns == "" {
		ns = "dynamo"
	}
	f := &Flags{
		fs:             fs,
		env:            env,
		namespace:      ns,
		runtime:        runtimeflags.Register(fs, env),
		modelPath:      fs.String("model-path", "", "model: a local Hugging Face directory or a hub id org/name (required; worker --engine llamacpp --native-framework-processing: a GGUF file, which names the model, or none)"),
		modelName:      fs.String("model-name", "", "served model name (default: derived from the model path)"),
		endpoint:       fs.String("endpoint", "dyn://"+ns+".backend.generate", "endpoint to serve, dyn://namespace.component.endpoint; a prefill worker's default is dyn://"+ns+".prefill.generate [env DYN_NAMESPACE sets the namespace]"),
		migrationLimit: fs.Int("migration-limit", 0, "times a frontend may re-issue a broken stream of this model on another worker (published on the model card)"),
		mode:           fs.String("disaggregation-mode", worker.ModeAggregated, "role in disaggregated serving: aggregated, prefill (publishes its card as model type Prefill, for the frontend's prefill stage) or decode (publishes no KV events)"),
		isPrefill:      fs.Bool("is-prefill-worker", false, "same as --disaggregation-mode prefill"),
		isDecode:       fs.Bool("is-decode-worker", false, "same as --disaggregation-mode decode"),
		revision:       fs.String("revision", "main", "hub revision (branch, tag or commit) for a hub id"),
		chatTemplate:   fs.String("custom-jinja-template", "", "Jinja chat template file that replaces the model's own"),
		toolParser:     fs.String("dyn-tool-call-parser", "", "tool call parser the frontend applies to this model's output, published on the model card: "+strings.Join(toolcall.Names(), ", ")),
		reasonParser:   fs.String("dyn-reasoning-parser", "", "reasoning parser the frontend applies to this model's output, published on the model card: "+strings.Join(reasoning.Names(), ", ")),
		loraAdapters: fs.String("lora-adapters", env("DYN_LORA_ADAPTERS"), "LoRA adapters to load at start, name=source,...: a source is file:///ABS/DIR, an absolute directory or hf://ORG/NAME[@REVISION]; "+
			"each is published as a model of its own (a failure to load one is fatal) [env DYN_LORA_ADAPTERS]"),
	}
	maxLoras := 0
	if v := env("DYN_MAX_LORAS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			f.envErrs = append(f.envErrs, fmt.Errorf("DYN_MAX_LORAS=%q: want an integer", v))
		}
		maxLoras = n
	}
	f.maxLoras = fs.Int("max-loras", maxLoras, "LoRA adapters active in the engine at once (0: no limit); a request for a held adapter beyond it is served after the least recently used idle one is unloaded (a swap) [env DYN_MAX_LORAS]")
	return f
}

// ParseLoraAdapters reads --lora-adapters: name=source pairs,
// comma-separated ("" for none).
func ParseLoraAdapters(v string) ([]worker.LoraAdapter, error) {
	var out []worker.LoraAdapter
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, source, ok := strings.Cut(item, "=")
		name, source = strings.TrimSpace(name), strings.TrimSpace(source)
		if !ok || name == "" || source == "" {
			return nil, fmt.Errorf("--lora-adapters %q: %q is not name=source", v, item)
		}
		out = append(out, worker.LoraAdapter{Name: name, Source: source})
	}
	return out, nil
}

// EnvHelp lists the environment variables Configs reads, for --help.
const EnvHelp = runtimeflags.EnvHelp + `Model download (for a hub id in --model-path):
  HF_HOME, HF_HUB_CACHE               cache location (~/.cache/huggingface, $HF_HOME/hub)
  HF_ENDPOINT                         hub URL (https://huggingface.co)
  HF_TOKEN                            access token for gated or private models
  HF_HUB_OFFLINE=1                    use the cache only
Health checks (canary requests to an idle engine; a failing endpoint leaves routing):
  DYN_HEALTH_CHECK_ENABLED            true to turn them on (false)
  DYN_CANARY_WAIT_TIME                seconds without output before a canary (10)
  DYN_HEALTH_CHECK_REQUEST_TIMEOUT    seconds to wait for a canary's first output (3)
  DYN_HEALTH_CHECK_PAYLOAD            canary request as JSON, or @file (default: the engine's)
  DYN_HEALTH_CHECK_PROBE_INTERVAL     seconds between asks of an engine's own health (cmd/worker: its /health),
                                      canaries on or off (5)
`

// Configs returns the worker and runtime configuration; it reports every
// bad value.
func (f *Flags) Configs() (worker.Config, runtime.Config, error) {
	errs := append([]error(nil), f.envErrs...)
	rt, err := f.runtime.Config()
	if err != nil {
		errs = append(errs, err)
	}
	ep, err := runtime.ParseEndpointID(*f.endpoint)
	if err != nil {
		errs = append(errs, fmt.Errorf("--endpoint: %w", err))
	}
	mode := *f.mode
	switch {
	case *f.isPrefill && *f.isDecode:
		errs = append(errs, errors.New("--is-prefill-worker and --is-decode-worker exclude each other"))
	case *f.isPrefill:
		mode = worker.ModePrefill
	case *f.isDecode:
		mode = worker.ModeDecode
	}
	if *f.modelPath == "" && !f.ModelPathOptional {
		errs = append(errs, errors.New("--model-path is required"))
	}
	if name := *f.toolParser; name != "" {
		if _, err := toolcall.Lookup(name); err != nil {
			errs = append(errs, fmt.Errorf("--dyn-tool-call-parser: %w", err))
		}
	}
	if name := *f.reasonParser; name != "" {
		if _, err := reasoning.Lookup(name); err != nil {
			errs = append(errs, fmt.Errorf("--dyn-reasoning-parser: %w", err))
		}
	}
	canary, err := canaryConfig(f.env)
	if err != nil {
		errs = append(errs, err)
	}
	hub := hfhub.ConfigFromEnv(f.env)
	hub.Revision = *f.revision
	hub.Progress = os.Stderr
	w := worker.Config{
		Endpoint:         ep,
		ModelPath:        *f.modelPath,
		ModelName:        *f.modelName,
		MigrationLimit:   *f.migrationLimit,
		ChatTemplateFile: *f.chatTemplate,
		ToolCallParser:   strings.ToLower(*f.toolParser),
		ReasoningParser:  strings.ToLower(*f.reasonParser),
		Hub:              hub,
		Canary:           canary,
	}
	if w.Loras, err = ParseLoraAdapters(*f.loraAdapters); err != nil {
		errs = append(errs, err)
	}
	w.MaxLoras = *f.maxLoras
	f.SetMode(&w, mode)
	if err := w.Validate(); err != nil {
		errs = append(errs, err)
	}
	return w, rt, errors.Join(errs...)
}

// SetMode sets w's disaggregation mode, and for a prefill worker whose
// --endpoint was not given the prefill endpoint dyn://{ns}.prefill.generate
// (the reference system's default, which keeps prefill workers out of the
// decode workers' instance list). main calls it again when a
// configuration file sets the mode.
func (f *Flags) SetMode(w *worker.Config, mode string) {
	w.DisaggregationMode = mode
	explicit := false
	f.fs.Visit(func(fl *flag.Flag) { explicit = explicit || fl.Name == "endpoint" })
	if explicit || w.Endpoint == (runtime.EndpointID{}) {
		return
	}
	component := "backend"
	if mode == worker.ModePrefill {
		component = "prefill"
	}
	w.Endpoint = runtime.EndpointID{Namespace: f.namespace, Component: component, Name: "generate"}
}

// canaryConfig reads the health-check variables; it reports every bad
// value.
func canaryConfig(env func(string) string) (worker.CanaryConfig, error) {
	var c worker.CanaryConfig
	var errs []error
	if v := env("DYN_HEALTH_CHECK_ENABLED"); v != "" {
		switch strings.ToLower(v) {
		case "1", "t", "true", "yes", "on":
			c.Enabled = true
		case "0", "f", "false", "no", "off":
		default:
			errs = append(errs, fmt.Errorf("DYN_HEALTH_CHECK_ENABLED=%q: want true or false", v))
		}
	}
	seconds := func(name string) time.Duration {
		v := env(name)
		if v == "" {
			return 0
		}
		if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
			return time.Duration(s * float64(time.Second))
		}
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			return d
		}
		errs = append(errs, fmt.Errorf("%s=%q: want a positive number of seconds", name, v))
		return 0
	}
	c.WaitTime = seconds("DYN_CANARY_WAIT_TIME")
	c.RequestTimeout = seconds("DYN_HEALTH_CHECK_REQUEST_TIMEOUT")
	c.ProbeInterval = seconds("DYN_HEALTH_CHECK_PROBE_INTERVAL")
	if v := env("DYN_HEALTH_CHECK_PAYLOAD"); v != "" {
		req, err := payload(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("DYN_HEALTH_CHECK_PAYLOAD: %w", err))
		}
		c.Payload = req // worker.Config.Validate wants token_ids in it
	}
	return c, errors.Join(errs...)
}

// payload decodes a canary request given as JSON or as @file.
func payload(v string) (*backend.Request, error) {
	b := []byte(v)
	if path, ok := strings.CutPrefix(v, "@"); ok {
		var err error
		if b, err = os.ReadFile(path); err != nil {
			return nil, err
		}
	}
	var req backend.Request
	if err := json.Unmarshal(b, &req); err != nil {
		return nil, fmt.Errorf("want a backend request in JSON (token_ids, stop_conditions, ...): %w", err)
	}
	return &req, nil
}
