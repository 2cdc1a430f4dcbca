package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// Errors of LoadLora and UnloadLora (besides the engine's own refusal, a
// *StatusError with the engine's message).
var (
	// ErrLoraUnavailable is wrapped by LoadLora's error when the engine
	// cannot load the adapter at all: vLLM without
	// VLLM_ALLOW_RUNTIME_LORA_UPDATING, an SGLang without the endpoint, a
	// llama-server not started with the adapter's file. It also wraps
	// backend.ErrInvalidArgument.
	ErrLoraUnavailable = errors.New("bridge: LoRA adapter unavailable")
	// ErrLoraNotLoaded is wrapped by UnloadLora's error for an adapter
	// the engine does not hold, and by Generate's for a request naming an
	// adapter a llama.cpp engine was not asked to load. It also wraps
	// backend.ErrInvalidArgument.
	ErrLoraNotLoaded = errors.New("bridge: LoRA adapter not loaded")
)

// loraTimeout bounds one load or unload call: loading an adapter reads
// its weights from disk.
const loraTimeout = 5 * time.Minute

var (
	_ backend.LoraEngine = (*Engine)(nil)
	_ loraDialect        = vllm{}
	_ loraDialect        = sglang{}
	_ loraDialect        = llamacpp{}
)

// loraDialect is how a dialect loads and unloads adapters.
type loraDialect interface {
	loadLora(ctx context.Context, e *Engine, name, path string) error
	unloadLora(ctx context.Context, e *Engine, name string) error
}

// LoadLora makes adapter name, whose files are at path (a local path the
// engine can read), servable: vLLM's POST /v1/load_lora_adapter, SGLang's
// POST /load_lora_adapter, and for llama.cpp the adapter of the server's
// GET /lora-adapters whose path (or file name) is path's. Requests with
// Routing.LoraName = name then use it. It implements backend.LoraEngine;
// it needs Start first. Errors wrap ErrLoraUnavailable, a *StatusError
// (the engine refused), or the connection's class.
func (e *Engine) LoadLora(ctx context.Context, name, path string) error {
	if err := e.loraReady(name); err != nil {
		return err
	}
	if path == "" {
		return fmt.Errorf("bridge: %w: LoRA adapter %q: no path", backend.ErrInvalidArgument, name)
	}
	ctx, cancel := context.WithTimeout(ctx, loraTimeout)
	defer cancel()
	start := time.Now()
	if err := e.d.(loraDialect).loadLora(ctx, e, name, path); err != nil {
		e.log.Warn("bridge: LoRA adapter not loaded", "dialect", e.cfg.Dialect, "lora", name, "path", path, "err", err)
		return fmt.Errorf("bridge: load LoRA adapter %q from %s: %w", name, path, err)
	}
	e.log.Info("bridge: LoRA adapter loaded", "dialect", e.cfg.Dialect, "lora", name, "path", path, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// UnloadLora releases adapter name: vLLM's POST /v1/unload_lora_adapter,
// SGLang's POST /unload_lora_adapter; llama.cpp keeps the adapter (it
// was given at its start) and the bridge forgets the name. It implements
// backend.LoraEngine. An adapter the engine does not hold is an error
// wrapping ErrLoraNotLoaded.
func (e *Engine) UnloadLora(ctx context.Context, name string) error {
	if err := e.loraReady(name); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, loraTimeout)
	defer cancel()
	if err := e.d.(loraDialect).unloadLora(ctx, e, name); err != nil {
		e.log.Warn("bridge: LoRA adapter not unloaded", "dialect", e.cfg.Dialect, "lora", name, "err", err)
		return fmt.Errorf("bridge: unload LoRA adapter %q: %w", name, err)
	}
	e.log.Info("bridge: LoRA adapter unloaded", "dialect", e.cfg.Dialect, "lora", name)
	return nil
}

// loraReady checks that Start succeeded and that name names something.
func (e *Engine) loraReady(name string) error {
	if _, ok := e.startedInfo(); !ok {
		return fmt.Errorf("%w: %w", backend.ErrEngineShutdown, ErrNotStarted)
	}
	if name == "" {
		return fmt.Errorf("bridge: %w: a LoRA adapter needs a name", backend.ErrInvalidArgument)
	}
	return nil
}

// loraUnavailable is the error of an engine that cannot load adapters,
// with what to do about it.
func loraUnavailable(format string, args ...any) error {
	return fmt.Errorf("%w: %w: %s", ErrLoraUnavailable, backend.ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// loraNotLoaded is the error of an adapter the engine does not hold.
func loraNotLoaded(format string, args ...any) error {
	return fmt.Errorf("%w: %w: %s", ErrLoraNotLoaded, backend.ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// routeMissing reports whether err is an engine's answer that it has no
// such endpoint: 405, or 404 with the web server's own "not found"
// (FastAPI's {"detail":"Not Found"}, llama-server's "File Not Found",
// Go's "404 page not found") rather than an error of the endpoint.
func routeMissing(err error) bool {
	var s *StatusError
	if !errors.As(err, &s) {
		return false
	}
	switch strings.ToLower(strings.Trim(strings.TrimSpace(s.Message), `"`)) {
	case "not found", "file not found", "404 page not found", "(no message)":
		return s.Status == 404
	}
	return s.Status == 405
}

// answered is a StatusError's status, for a message that says what it
// means.
func answered(err error) string {
	var s *StatusError
	if errors.As(err, &s) {
		return fmt.Sprintf("%s answered %d", s.Path, s.Status)
	}
	return err.Error()
}

// isStatus reports whether err is an engine's answer with status code.
func isStatus(err error, code int) bool {
	var s *StatusError
	return errors.As(err, &s) && s.Status == code
}

// postLora posts body to path and returns the answer's body (at most
// 64 KiB; the engines answer a short text or JSON).
func (e *Engine) postLora(ctx context.Context, path string, body any) ([]byte, error) {
	resp, err := e.post(ctx, path, body, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
}

// loraBody is the body of vLLM's and SGLang's load and unload requests.
type loraBody struct {
	Name string `json:"lora_name"`
	Path string `json:"lora_path,omitempty"`
}

// vllmLoraHint says how a vLLM server is started to load adapters at run
// time.
const vllmLoraHint = "start vLLM with --enable-lora (and --max-lora-rank for the adapter's rank) and the environment variable VLLM_ALLOW_RUNTIME_LORA_UPDATING=True"

func (vllm) loadLora(ctx context.Context, e *Engine, name, path string) error {
	_, err := e.postLora(ctx, "/v1/load_lora_adapter", loraBody{Name: name, Path: path})
	if routeMissing(err) {
		return loraUnavailable("the vllm engine at %s does not load adapters at run time (%s): %s", e.base, answered(err), vllmLoraHint)
	}
	return err
}

func (vllm) unloadLora(ctx context.Context, e *Engine, name string) error {
	_, err := e.postLora(ctx, "/v1/unload_lora_adapter", loraBody{Name: name})
	switch {
	case routeMissing(err):
		return loraUnavailable("the vllm engine at %s does not unload adapters at run time (%s): %s", e.base, answered(err), vllmLoraHint)
	case isStatus(err, 404):
		return fmt.Errorf("%w: %w", ErrLoraNotLoaded, err) // err wraps backend.ErrInvalidArgument
	}
	return err
}

// sglangLoraResult is SGLang's answer to a load or unload: success false
// (with HTTP 400) and error_message when it refused.
type sglangLoraResult struct {
	Success      *bool  `json:"success"`
	ErrorMessage string `json:"error_message"`
}

// sglangLoraHint says how an SGLang server is started to load adapters.
const sglangLoraHint = "start SGLang with --enable-lora (and --max-lora-rank, --lora-target-modules for the adapters it will load), in a version with /load_lora_adapter"

func (sglang) loadLora(ctx context.Context, e *Engine, name, path string) error {
	return sglangLoraCall(ctx, e, "/load_lora_adapter", loraBody{Name: name, Path: path})
}

func (sglang) unloadLora(ctx context.Context, e *Engine, name string) error {
	return sglangLoraCall(ctx, e, "/unload_lora_adapter", loraBody{Name: name})
}

// sglangLoraCall posts a load or unload and reads SGLang's answer: a 200
// whose success is false is a refusal too.
func sglangLoraCall(ctx context.Context, e *Engine, path string, body loraBody) error {
	b, err := e.postLora(ctx, path, body)
	if routeMissing(err) {
		return loraUnavailable("the sglang engine at %s has no %s (%s): %s", e.base, path, answered(err), sglangLoraHint)
	}
	if err != nil {
		return err
	}
	var res sglangLoraResult
	if json.Unmarshal(b, &res) == nil && res.Success != nil && !*res.Success {
		return &StatusError{Dialect: DialectSGLang, Path: path, Status: 200, Message: res.ErrorMessage, class: backend.ErrInvalidArgument}
	}
	return nil
}
