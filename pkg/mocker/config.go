package mocker

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

// ErrInvalidConfig is wrapped by every error of Config.Validate.
var ErrInvalidConfig = errors.New("mocker: invalid config")

// Config configures an Engine (the reference system's MockEngineArgs; the
// JSON names of --extra-engine-args are given per field). Start from
// DefaultConfig: the zero value of a numeric field means "the default"
// where that is noted, but booleans and Watermark take their zero values
// literally.
type Config struct {
	// Model is the model name reported by Start. Zero: "mocker".
	Model string
	// ContextLength is the maximum prompt + output length. Zero: 32768.
	ContextLength int
	// NumGPUBlocks (num_gpu_blocks) is the KV-cache capacity in blocks per
	// rank. Zero: 16384.
	NumGPUBlocks int
	// BlockSize (block_size) is the number of tokens per KV block; it must
	// be > 1. Zero: 64.
	BlockSize int
	// MaxNumSeqs (max_num_seqs) caps sequences in prefill + decode per rank.
	// Zero: 256.
	MaxNumSeqs int
	// MaxNumBatchedTokens (max_num_batched_tokens) caps tokens per pass per
	// rank. Zero: 8192.
	MaxNumBatchedTokens int
	// EnablePrefixCaching (enable_prefix_caching) shares full blocks
	// between requests and publishes KV events. Zero: off; default on.
	EnablePrefixCaching bool
	// EnableChunkedPrefill (enable_chunked_prefill) admits a request whose
	// prompt does not fit the current pass's token budget. Zero: off;
	// default on.
	EnableChunkedPrefill bool
	// Watermark (watermark) is the fraction of blocks kept free at
	// admission, in [0, 1). Zero: no reserve; default 0.01.
	Watermark float64
	// SpeedupRatio (speedup_ratio) divides every simulated duration.
	// Zero: 1.
	SpeedupRatio float64
	// DPSize (dp_size) is the number of data-parallel ranks. Zero: 1.
	DPSize int
	// StartupTime (startup_time) is slept by Start before serving.
	// Zero: none.
	StartupTime time.Duration
	// Deterministic makes output tokens DeterministicTokenIn(OutputTokens,
	// seed, position) instead of random. Zero: random.
	Deterministic bool
	// OutputTokens are the ids output tokens are drawn from (cmd/mocker
	// passes the model's ordinary tokens, so the output decodes to text and
	// never hits EOS by chance). Empty: [1000, 2000).
	OutputTokens []uint32
	// Script, when set, is asked once per choice of every request for a
	// scripted answer: when it returns ok, that choice's output is
	// exactly ids, one token per scheduler step with the engine's usual
	// timing, cut at max_tokens (FinishLength) and otherwise ending with
	// FinishEOS after the last id, like a model that produced EOS (EOS
	// and stop ids in ids do not end it early). choice is 0..n-1
	// (sampling_options.n). It is called from Generate, concurrently for
	// concurrent requests, and must not keep req. cmd/mocker builds it
	// from --canned-responses and the request's guided decoding (see
	// SchemaInstance). Nil: no scripts.
	Script func(req *backend.Request, choice int) (ids []uint32, ok bool)

	// OutputPerToken sends every token as its own output. By default the
	// tokens a stream takes together (it fell behind the scheduler: a busy
	// caller, or a speedup so high that many passes run between two
	// reads) leave as one output, as vLLM's output collector merges a
	// request's deltas.
	OutputPerToken bool

	// ExitAfterTokens, when > 0, calls Exit(1) once the engine has emitted
	// that many tokens in total, over all requests. Zero: off.
	ExitAfterTokens int
	// Exit is called by the exit fault; cmd passes os.Exit. Required when
	// ExitAfterTokens > 0.
	Exit func(code int)
	// DropAfterTokens, when > 0, makes Generate return
	// backend.ErrDropStream after emitting that many tokens of a stream
	// (without a terminal output). Zero: off.
	DropAfterTokens int
	// StallAfterTokens, when > 0, makes a stream stop emitting after that
	// many tokens and wait until the request is killed (its context is
	// done). Zero: off.
	StallAfterTokens int

	// DisaggregationMode (worker_type) is the engine's role in
	// disaggregated serving: ModeAggregated (or ""), ModePrefill or
	// ModeDecode; see the package documentation.
	DisaggregationMode string
	// BootstrapAddr, for a prefill engine, is the host:port its bootstrap
	// server listens on for decode engines (port 0: a free one, reported
	// by Start as backend.Config.BootstrapPort). Zero: no bootstrap
	// server; decode engines learn of the prefill synchronously.
	BootstrapAddr string
	// KVTransferBandwidth (kv_transfer_bandwidth) is the bandwidth, in GB/s
	// (10^9 bytes per second), at which a prefill engine's KV cache reaches
	// the decode engine: a prefill sleeps prompt tokens · KVBytesPerToken /
	// bandwidth (divided by SpeedupRatio) before it answers. Zero: no
	// delay; default 64.
	KVTransferBandwidth float64
	// KVBytesPerToken is the size of one token's KV cache in bytes,
	// num_layers·2·num_kv_heads·head_dim·dtype_bytes (see
	// KVBytesPerToken). Zero: unknown, no transfer delay.
	KVBytesPerToken int

	// EmbeddingDim, when > 0, makes the engine an embedding model too:
	// it answers embedding requests (backend.Request.Embedding) with
	// DeterministicEmbedding vectors of this many dimensions, or fewer
	// when the request asks (embed.go). Zero: embedding requests are
	// refused.
	EmbeddingDim int

	// LoraLoadTime (--lora-load-time) is the simulated time LoadLora
	// takes to load a LoRA adapter, divided by SpeedupRatio. Zero: none;
	// default 50 ms.
	LoraLoadTime time.Duration

	// Logger receives the engine's few log lines. Zero: discarded.
	Logger *slog.Logger
}

// Disaggregation modes (Config.DisaggregationMode).
const (
	ModeAggregated = "aggregated"
	ModePrefill    = "prefill"
	ModeDecode     = "decode"
)

// DefaultConfig returns the reference system's defaults.
func DefaultConfig() Config {
	return Config{
		Model:                "mocker",
		ContextLength:        32768,
		NumGPUBlocks:         16384,
		BlockSize:            64,
		MaxNumSeqs:           256,
		MaxNumBatchedTokens:  8192,
		EnablePrefixCaching:  true,
		EnableChunkedPrefill: true,
		Watermark:            0.01,
		SpeedupRatio:         1,
		DPSize:               1,
		DisaggregationMode:   ModeAggregated,
		KVTransferBandwidth:  64,
		LoraLoadTime:         50 * time.Millisecond,
	}
}

// withDefaults fills the zero numeric fields that have defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Model == "" {
		c.Model = d.Model
	}
	for _, f := range []struct{ v, def *int }{
		{&c.ContextLength, &d.ContextLength}, {&c.NumGPUBlocks, &d.NumGPUBlocks},
		{&c.BlockSize, &d.BlockSize}, {&c.MaxNumSeqs, &d.MaxNumSeqs},
		{&c.MaxNumBatchedTokens, &d.MaxNumBatchedTokens}, {&c.DPSize, &d.DPSize},
	} {
		if *f.v == 0 {
			*f.v = *f.def
		}
	}
	if c.SpeedupRatio == 0 {
		c.SpeedupRatio = d.SpeedupRatio
	}
	if c.DisaggregationMode == "" {
		c.DisaggregationMode = ModeAggregated
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports every problem of c (after filling defaults), joined,
// each wrapping ErrInvalidConfig.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"context_length", c.ContextLength}, {"num_gpu_blocks", c.NumGPUBlocks},
		{"max_num_seqs", c.MaxNumSeqs}, {"max_num_batched_tokens", c.MaxNumBatchedTokens},
		{"dp_size", c.DPSize},
	} {
		if f.v < 0 {
			bad("%s must be positive, got %d", f.name, f.v)
		}
	}
	if c.BlockSize < 2 {
		bad("block_size must be > 1, got %d", c.BlockSize)
	}
	if c.Watermark < 0 || c.Watermark >= 1 {
		bad("watermark must be in [0, 1), got %v", c.Watermark)
	}
	if !(c.SpeedupRatio > 0) {
		bad("speedup_ratio must be > 0, got %v", c.SpeedupRatio)
	}
	if c.StartupTime < 0 {
		bad("startup_time must not be negative, got %v", c.StartupTime)
	}
	if c.LoraLoadTime < 0 {
		bad("lora_load_time must not be negative, got %v", c.LoraLoadTime)
	}
	if c.ExitAfterTokens < 0 || c.DropAfterTokens < 0 || c.StallAfterTokens < 0 {
		bad("fault injection counts must not be negative")
	}
	if c.ExitAfterTokens > 0 && c.Exit == nil {
		bad("ExitAfterTokens needs Exit")
	}
	switch c.DisaggregationMode {
	case ModeAggregated, ModePrefill, ModeDecode:
	default:
		bad("disaggregation mode %q: want aggregated, prefill or decode", c.DisaggregationMode)
	}
	if c.BootstrapAddr != "" {
		if c.DisaggregationMode != ModePrefill {
			bad("a bootstrap address (%s) needs the prefill mode, not %s", c.BootstrapAddr, c.DisaggregationMode)
		}
		if _, _, err := net.SplitHostPort(c.BootstrapAddr); err != nil {
			bad("bootstrap address: %v", err)
		}
	}
	if !(c.KVTransferBandwidth >= 0) || math.IsInf(c.KVTransferBandwidth, 0) {
		bad("kv_transfer_bandwidth must be a non-negative number of GB/s, got %v", c.KVTransferBandwidth)
	}
	if c.KVBytesPerToken < 0 {
		bad("kv_bytes_per_token must not be negative, got %d", c.KVBytesPerToken)
	}
	if c.EmbeddingDim < 0 {
		bad("embedding dimension must not be negative, got %d", c.EmbeddingDim)
	}
	return errors.Join(errs...)
}
