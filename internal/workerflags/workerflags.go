// Package workerflags registers the command-line flags every worker binary
// shares (model, endpoint, migration limit, disaggregation mode, the
// Hugging Face hub settings) and folds them, with the runtime's flags and
// environment, into a worker.Config and a runtime.Config. It reads
// the environment only through the lookup function main passes in.
package workerflags

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/dynamo-go/dynamo/internal/runtimeflags"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/hfhub"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// Flags holds the registered flags until Configs is called.
type Flags struct {
	env            func(string) string
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
}

// Register adds the worker flags and the runtime flags to fs.
func Register(fs *flag.FlagSet, env func(string) string) *Flags {
	ns := env("DYN_NAMESPACE")
	if ns == "" {
		ns = "dynamo"
	}
	return &Flags{
		env:            env,
		runtime:        runtimeflags.Register(fs, env),
		modelPath:      fs.String("model-path", "", "model: a local Hugging Face directory or a hub id org/name (required)"),
		modelName:      fs.String("model-name", "", "served model name (default: derived from the model path)"),
		endpoint:       fs.String("endpoint", "dyn://"+ns+".backend.generate", "endpoint to serve, dyn://namespace.component.endpoint [env DYN_NAMESPACE sets the namespace]"),
		migrationLimit: fs.Int("migration-limit", 0, "times a frontend may re-issue a broken stream of this model on another worker (published on the model card)"),
		mode:           fs.String("disaggregation-mode", worker.ModeAggregated, "aggregated, prefill or decode"),
		isPrefill:      fs.Bool("is-prefill-worker", false, "same as --disaggregation-mode prefill"),
		isDecode:       fs.Bool("is-decode-worker", false, "same as --disaggregation-mode decode"),
		revision:       fs.String("revision", "main", "hub revision (branch, tag or commit) for a hub id"),
		chatTemplate:   fs.String("custom-jinja-template", "", "Jinja chat template file that replaces the model's own"),
	}
}

// EnvHelp lists the environment variables Configs reads, for --help.
const EnvHelp = runtimeflags.EnvHelp + `Model download (for a hub id in --model-path):
  HF_HOME, HF_HUB_CACHE               cache location (~/.cache/huggingface, $HF_HOME/hub)
  HF_ENDPOINT                         hub URL (https://huggingface.co)
  HF_TOKEN                            access token for gated or private models
  HF_HUB_OFFLINE=1                    use the cache only
`

// Configs returns the worker and runtime configuration; it reports every
// bad value.
func (f *Flags) Configs() (worker.Config, runtime.Config, error) {
	var errs []error
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
	if *f.modelPath == "" {
		errs = append(errs, errors.New("--model-path is required"))
	}
	hub := hfhub.ConfigFromEnv(f.env)
	hub.Revision = *f.revision
	hub.Progress = os.Stderr
	w := worker.Config{
		Endpoint:           ep,
		ModelPath:          *f.modelPath,
		ModelName:          *f.modelName,
		MigrationLimit:     *f.migrationLimit,
		DisaggregationMode: mode,
		ChatTemplateFile:   *f.chatTemplate,
		Hub:                hub,
	}
	if err := w.Validate(); err != nil {
		errs = append(errs, err)
	}
	return w, rt, errors.Join(errs...)
}
