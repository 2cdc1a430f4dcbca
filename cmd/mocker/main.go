// Command mocker runs the mocker engine as Dynamo workers: a CPU-only
// simulation of a vLLM-like engine (continuous batching, paged KV cache
// with prefix caching, realistic timing, KV events) that registers and
// serves exactly like a real worker.
//
//	mocker --model-path models/demo --speedup-ratio 10
//
// With --serve-vllm-api it is a vLLM server instead (package
// pkg/mocker/vllmapi): one engine behind vLLM's OpenAI-compatible HTTP API
// with token ids, and optionally vLLM's ZeroMQ KV event stream; no Dynamo
// runtime, discovery, NATS or etcd is used.
//
//	mocker --model-path models/demo --serve-vllm-api --vllm-port 8000 --kv-events-port 5557
//
// Flags and environment: mocker --help.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dynamo-go/dynamo/internal/envflag"
	"github.com/dynamo-go/dynamo/internal/obsflags"
	"github.com/dynamo-go/dynamo/internal/pprofserver"
	"github.com/dynamo-go/dynamo/internal/rungroup"
	"github.com/dynamo-go/dynamo/internal/version"
	"github.com/dynamo-go/dynamo/internal/workerflags"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/hfhub"
	"github.com/dynamo-go/dynamo/pkg/mocker"
	"github.com/dynamo-go/dynamo/pkg/mocker/vllmapi"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/openai"
	"github.com/dynamo-go/dynamo/pkg/preprocessor"
	"github.com/dynamo-go/dynamo/pkg/preprocessor/tokenizer"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/dynamo-go/dynamo/pkg/telemetry"
)

func main() { os.Exit(run(os.Args[1:], os.Getenv, os.Stderr)) }

// run returns the exit code: 0 after a clean shutdown, 1 when a worker
// failed (the reason is printed), 2 for bad flags.
func run(args []string, env func(string) string, stderr io.Writer) int {
	fs := flag.NewFlagSet("mocker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	wf := workerflags.Register(fs, env)
	mf := registerMocker(envflag.New(fs, env))
	showVersion := version.Flag(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: mocker --model-path DIR|ORG/NAME [flags]")
		fs.PrintDefaults()
		fmt.Fprintln(stderr, "\nEvery mocker flag can also be set as DYN_MOCKER_<FLAG> (e.g. DYN_MOCKER_SPEEDUP_RATIO=100).")
		fmt.Fprint(stderr, workerflags.EnvHelp)
		fmt.Fprintln(stderr, "  DYN_WORKER_GRACEFUL_SHUTDOWN_TIMEOUT  seconds after a signal before a forced exit with code 70 (30)")
		fmt.Fprintln(stderr, "  DYN_PPROF_ADDR                      serve Go profiles (/debug/pprof/) on this address (off)")
		fmt.Fprint(stderr, obsflags.EnvHelp)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mocker: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *showVersion {
		version.Print(os.Stdout, "mocker")
		return 0
	}
	wcfg, rcfg, werr := wf.Configs()
	mcfg, mode, merr := mf.config()
	vcfg, verr := mf.vllmConfig()
	if err := errors.Join(werr, merr, verr); err != nil {
		fmt.Fprintln(stderr, "mocker:", err)
		return 2
	}
	if mode != "" {
		wf.SetMode(&wcfg, mode)
	}
	mcfg.DisaggregationMode = wcfg.DisaggregationMode
	if m := wcfg.DisaggregationMode; *mf.serveVLLM && (m == worker.ModePrefill || m == worker.ModeDecode) {
		fmt.Fprintf(stderr, "mocker: --serve-vllm-api serves an aggregated engine (this one is %s)\n", m)
		return 2
	}
	if mcfg.EmbeddingDim > 0 {
		if m := wcfg.DisaggregationMode; m == worker.ModePrefill || m == worker.ModeDecode {
			fmt.Fprintf(stderr, "mocker: --embedding-dim serves an embedding model, which is not disaggregated (this worker is %s)\n", wcfg.DisaggregationMode)
			return 2
		}
		wcfg.ModelTypes = []string{"embedding"}
	}
	if _, listens := mf.bootstrapPort(0); listens && wcfg.DisaggregationMode != worker.ModePrefill {
		fmt.Fprintf(stderr, "mocker: --bootstrap-ports needs --disaggregation-mode prefill (this worker is %s)\n", wcfg.DisaggregationMode)
		return 2
	}
	hardExit, err := seconds(env("DYN_WORKER_GRACEFUL_SHUTDOWN_TIMEOUT"), 30*time.Second)
	if err != nil {
		fmt.Fprintln(stderr, "mocker: DYN_WORKER_GRACEFUL_SHUTDOWN_TIMEOUT:", err)
		return 2
	}
	tcfg, err := obsflags.Tracing(env, "mocker")
	if err != nil {
		fmt.Fprintln(stderr, "mocker:", err)
		return 2
	}
	log := obsflags.Logger(stderr, env)
	wcfg.Logger = log
	mcfg.Logger = log
	mcfg.Exit = os.Exit

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	tp, err := telemetry.New(ctx, tcfg)
	if err != nil {
		fmt.Fprintln(stderr, "mocker:", err)
		return 1
	}
	defer func() {
		if err := tp.Close(); err != nil {
			log.Warn("mocker: tracing", "err", err)
		}
	}()
	wcfg.TracerProvider = tp.TracerProvider()
	model, err := fillFromModel(ctx, &mcfg, wcfg, *mf.kvCacheDType, mf.canned, log)
	if err != nil {
		fmt.Fprintln(stderr, "mocker:", err)
		return 1
	}
	if err := mcfg.Validate(); err != nil {
		fmt.Fprintln(stderr, "mocker:", err)
		return 2
	}
	owners := []rungroup.Owner{
		forceExit(ctx, hardExit, stderr),
		func(ctx context.Context) error { return pprofserver.Run(ctx, env(pprofserver.Env), log) },
	}
	if *mf.serveVLLM {
		srv, err := newVLLMServer(vcfg, mcfg, model, log)
		if err != nil {
			fmt.Fprintln(stderr, "mocker:", err)
			return 2
		}
		if err := rungroup.Run(ctx, append(owners, srv.Run)...); err != nil {
			fmt.Fprintln(stderr, "mocker:", err)
			return 1
		}
		return 0
	}
	for i := range *mf.numWorkers {
		rc := rcfg
		if i > 0 {
			rc.SystemPort = runtime.SystemPortDisabled // one status server per process
		}
		mc := mcfg
		if port, ok := mf.bootstrapPort(i); ok {
			// Bound like the request plane: the advertised host when it
			// is loopback, every interface otherwise; the worker
			// advertises the runtime's host in the card.
			mc.BootstrapAddr = net.JoinHostPort(rc.TCPBindHost(), strconv.Itoa(port))
		}
		owners = append(owners, func(ctx context.Context) error { return runWorker(ctx, rc, wcfg, mc, log) })
	}
	// One failed worker takes the process down.
	if err := rungroup.Run(ctx, owners...); err != nil {
		fmt.Fprintln(stderr, "mocker:", err)
		return 1
	}
	return 0
}

// forceExit is the owner that ends the process with code 70 when the
// shutdown a signal (the end of sig) started takes longer than d. It
// stops last, once everything else has returned.
func forceExit(sig context.Context, d time.Duration, stderr io.Writer) rungroup.Owner {
	return func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return nil
		case <-sig.Done():
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
			fmt.Fprintf(stderr, "mocker: shutdown took longer than %s; exiting\n", d)
			os.Exit(70)
		}
		return nil
	}
}

// runWorker runs one mocker worker with its own runtime (its own lease and
// instance id) until ctx ends; the runtime outlives the worker's drain. A
// failure of the runtime (a port in use, a lost lease) is the cause the
// worker's own error only echoes, and rungroup reports it first.
func runWorker(ctx context.Context, rcfg runtime.Config, wcfg worker.Config, mcfg mocker.Config, log *slog.Logger) error {
	rt, err := runtime.New(ctx, rcfg, runtime.Deps{Logger: log, Registry: prometheus.NewRegistry(), TracerProvider: wcfg.TracerProvider})
	if err != nil {
		return err
	}
	eng, err := mocker.New(mcfg)
	if err != nil {
		return errors.Join(err, rt.Close())
	}
	return rungroup.Run(ctx, rt.Run, func(ctx context.Context) error { return worker.Run(ctx, rt, eng, wcfg) })
}

// modelInfo is what the vLLM API mode needs of the model besides the
// engine's configuration.
type modelInfo struct {
	tok  *tokenizer.Tokenizer
	eos  []uint32
	card *modelcard.Card
}

// newVLLMServer builds the --serve-vllm-api server over a new engine.
func newVLLMServer(v vllmapi.Config, m mocker.Config, model *modelInfo, log *slog.Logger) (*vllmapi.Server, error) {
	eng, err := mocker.New(m)
	if err != nil {
		return nil, err
	}
	v.Model, v.ContextLength, v.BlockSize, v.NumGPUBlocks = m.Model, m.ContextLength, m.BlockSize, m.NumGPUBlocks
	if v.ContextLength == 0 {
		v.ContextLength = mocker.DefaultConfig().ContextLength
	}
	v.EOSTokenIDs, v.Tokenize, v.Detokenize = model.eos, model.tok.Encode, model.tok.Decode
	if v.TokenizeChat, err = chatTokenizer(model.card); err != nil {
		return nil, err
	}
	v.Logger = log
	return vllmapi.New(v, eng)
}

// fillFromModel takes the model name, the context length and the KV
// bytes per token (for a prefill worker's transfer delay) from the model
// directory when the flags do not set them, and builds the script of
// canned answers and guided decoding with the model's tokenizer, which it
// returns with the model's EOS ids.
func fillFromModel(ctx context.Context, c *mocker.Config, w worker.Config, kvCacheDType string, canned []cannedEntry, log *slog.Logger) (*modelInfo, error) {
	dir, err := hfhub.Resolve(ctx, w.Hub, w.ModelPath)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", w.ModelPath, err)
	}
	card, err := modelcard.FromDir(dir, modelcard.Options{Name: w.ModelName, Source: w.ModelPath, ChatTemplateFile: w.ChatTemplateFile})
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", w.ModelPath, err)
	}
	c.Model = card.DisplayName
	if c.ContextLength == 0 {
		c.ContextLength = int(card.ContextLength)
	}
	tok, err := tokenizer.FromBytes(card.TokenizerJSON.Bytes())
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", w.ModelPath, err)
	}
	info := &modelInfo{tok: tok, eos: card.GenConfig.EOSTokenIDs, card: card}
	c.OutputTokens = outputVocabulary(tok, card.GenConfig.EOSTokenIDs)
	if c.Script, err = newScript(tok, canned, log); err != nil {
		return nil, err
	}
	if c.DisaggregationMode == mocker.ModePrefill && c.KVBytesPerToken == 0 && c.KVTransferBandwidth > 0 {
		var err error
		if card.ConfigJSON == nil {
			err = fmt.Errorf("%w: the model has no config.json", mocker.ErrNoKVShape)
		} else {
			c.KVBytesPerToken, err = mocker.KVBytesPerToken(card.ConfigJSON.Bytes(), kvCacheDType)
		}
		switch {
		case errors.Is(err, mocker.ErrNoKVShape):
			log.Info("mocker: no KV transfer delay (set --kv-bytes-per-token for one)", "model", w.ModelPath, "reason", err)
		case err != nil:
			return nil, fmt.Errorf("model %s: %w", w.ModelPath, err)
		default:
			log.Info("mocker: KV transfer delay", "kv_bytes_per_token", c.KVBytesPerToken, "gb_per_s", c.KVTransferBandwidth)
		}
	}
	return info, nil
}

// outputVocabulary returns the model's ordinary tokens: ids that are not
// special, not EOS, and decode on their own to non-empty valid UTF-8
// without control characters.
// Drawing output from them makes the mocker's answers decode to text (of
// no meaning) and never end early on an EOS by chance.
func outputVocabulary(tok *tokenizer.Tokenizer, eos []uint32) []uint32 {
	skip := map[uint32]bool{}
	for _, id := range eos {
		skip[id] = true
	}
	var out []uint32
	for id := uint32(0); int(id) < tok.VocabSize(); id++ {
		if skip[id] || tok.IsSpecial(id) {
			continue
		}
		s, err := tok.Decode([]uint32{id}, false)
		if err != nil || s == "" || !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r == utf8.RuneError || unicode.IsControl(r) }) {
			continue
		}
		out = append(out, id)
	}
	return out
}

func seconds(v string, def time.Duration) (time.Duration, error) {
	if v == "" {
		return def, nil
	}
	s, err := strconv.ParseFloat(v, 64)
	if err != nil || s <= 0 {
		return 0, fmt.Errorf("%q: want a positive number of seconds", v)
	}
	return time.Duration(s * float64(time.Second)), nil
}

// chatTokenizer is the vLLM API's /tokenize for messages: the model's
// chat template rendered and tokenized as the frontend does it
// (pkg/preprocessor), so that engine preprocessing gives the frontend's
// tokens. Nil when the model has no chat template.
func chatTokenizer(card *modelcard.Card) (func(*backend.TokenizeRequest) ([]uint32, error), error) {
	if card == nil || card.ChatTemplate == nil {
		return nil, nil
	}
	m, err := preprocessor.NewModel(card, preprocessor.Options{})
	if err != nil {
		return nil, err
	}
	return func(tr *backend.TokenizeRequest) ([]uint32, error) {
		req := &openai.ChatCompletionRequest{
			AddGenerationPrompt:  &tr.AddGenerationPrompt,
			ContinueFinalMessage: &tr.ContinueFinalMessage,
			ChatTemplateKwargs:   tr.ChatTemplateKwargs,
		}
		if err := json.Unmarshal(tr.Messages, &req.Messages); err != nil {
			return nil, fmt.Errorf("%w: messages: %v", vllmapi.ErrBadChat, err)
		}
		if len(tr.Tools) > 0 && string(tr.Tools) != "null" {
			if err := json.Unmarshal(tr.Tools, &req.Tools); err != nil {
				return nil, fmt.Errorf("%w: tools: %v", vllmapi.ErrBadChat, err)
			}
		}
		text, err := m.RenderChat(req)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", vllmapi.ErrBadChat, err)
		}
		ids, err := m.Tokenizer().Encode(text, false)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", vllmapi.ErrBadChat, err)
		}
		return ids, nil
	}, nil
}
