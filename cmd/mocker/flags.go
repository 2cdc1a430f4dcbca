package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/mocker"
)

// mockerFlags are the mocker's own flags (MockEngineArgs). Each can also be
// set with DYN_MOCKER_<FLAG> (e.g. DYN_MOCKER_SPEEDUP_RATIO=100); a flag on
// the command line wins.
type mockerFlags struct {
	env                 func(string) string
	errs                []error
	numGPUBlocks        *int
	blockSize           *int
	maxNumSeqs          *int
	maxNumBatchedTokens *int
	prefixCaching       *bool
	noPrefixCaching     *bool
	chunkedPrefill      *bool
	noChunkedPrefill    *bool
	watermark           *float64
	speedupRatio        *float64
	dpSize              *int
	startupTime         *float64
	contextLength       *int
	extraEngineArgs     *string
	numWorkers          *int
	deterministic       *bool
	exitAfter           *int
	dropAfter           *int
	stallAfter          *int
}

func registerMocker(fs *flag.FlagSet, env func(string) string) *mockerFlags {
	d := mocker.DefaultConfig()
	m := &mockerFlags{env: env}
	m.numGPUBlocks = fs.Int("num-gpu-blocks-override", m.envInt("num-gpu-blocks-override", d.NumGPUBlocks), "KV-cache capacity in blocks, per data-parallel rank")
	m.blockSize = fs.Int("block-size", m.envInt("block-size", d.BlockSize), "tokens per KV-cache block")
	m.maxNumSeqs = fs.Int("max-num-seqs", m.envInt("max-num-seqs", d.MaxNumSeqs), "maximum running sequences per rank")
	m.maxNumBatchedTokens = fs.Int("max-num-batched-tokens", m.envInt("max-num-batched-tokens", d.MaxNumBatchedTokens), "token budget of one forward pass")
	m.prefixCaching = fs.Bool("enable-prefix-caching", m.envBool("enable-prefix-caching", d.EnablePrefixCaching), "share cached prefix blocks between requests (and publish KV events)")
	m.noPrefixCaching = fs.Bool("no-enable-prefix-caching", false, "turn prefix caching off")
	m.chunkedPrefill = fs.Bool("enable-chunked-prefill", m.envBool("enable-chunked-prefill", d.EnableChunkedPrefill), "split long prompts over several passes")
	m.noChunkedPrefill = fs.Bool("no-enable-chunked-prefill", false, "turn chunked prefill off")
	m.watermark = fs.Float64("watermark", m.envFloat("watermark", d.Watermark), "fraction of KV blocks kept free when admitting requests")
	m.speedupRatio = fs.Float64("speedup-ratio", m.envFloat("speedup-ratio", d.SpeedupRatio), "divide every simulated duration by this (tests use 100 or more)")
	m.dpSize = fs.Int("data-parallel-size", m.envInt("data-parallel-size", d.DPSize), "data-parallel ranks simulated by one worker")
	m.startupTime = fs.Float64("startup-time", m.envFloat("startup-time", 0), "seconds to sleep before serving (a model load)")
	m.contextLength = fs.Int("context-length", m.envInt("context-length", 0), "maximum prompt+output tokens (default: the model's config.json)")
	m.extraEngineArgs = fs.String("extra-engine-args", env("DYN_MOCKER_EXTRA_ENGINE_ARGS"), "JSON file with MockEngineArgs (num_gpu_blocks, block_size, ...) overriding the flags")
	m.numWorkers = fs.Int("num-workers", m.envInt("num-workers", 1), "mocker workers in this process, each with its own runtime and instance id")
	m.deterministic = fs.Bool("deterministic", m.envBool("deterministic", false), "output token at position i is a pure function of (request seed, i): same answer on every worker")
	m.exitAfter = fs.Int("exit-after-tokens", m.envInt("exit-after-tokens", 0), "fault injection: exit the process after emitting this many tokens (0 = off)")
	m.dropAfter = fs.Int("drop-after-tokens", m.envInt("drop-after-tokens", 0), "fault injection: drop each stream after this many tokens (0 = off)")
	m.stallAfter = fs.Int("stall-after-tokens", m.envInt("stall-after-tokens", 0), "fault injection: stall each stream after this many tokens (0 = off)")
	return m
}

func envName(flagName string) string {
	return "DYN_MOCKER_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

func (m *mockerFlags) envInt(name string, def int) int {
	v := m.env(envName(name))
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		m.errs = append(m.errs, fmt.Errorf("%s=%q: want an integer", envName(name), v))
		return def
	}
	return n
}

func (m *mockerFlags) envFloat(name string, def float64) float64 {
	v := m.env(envName(name))
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		m.errs = append(m.errs, fmt.Errorf("%s=%q: want a number", envName(name), v))
		return def
	}
	return f
}

func (m *mockerFlags) envBool(name string, def bool) bool {
	v := m.env(envName(name))
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		m.errs = append(m.errs, fmt.Errorf("%s=%q: want true or false", envName(name), v))
		return def
	}
	return b
}

// engineArgs is the --extra-engine-args file: the reference system's
// MockEngineArgs keys. Unknown keys are an error.
type engineArgs struct {
	NumGPUBlocks         *int     `json:"num_gpu_blocks"`
	BlockSize            *int     `json:"block_size"`
	MaxNumSeqs           *int     `json:"max_num_seqs"`
	MaxNumBatchedTokens  *int     `json:"max_num_batched_tokens"`
	EnablePrefixCaching  *bool    `json:"enable_prefix_caching"`
	EnableChunkedPrefill *bool    `json:"enable_chunked_prefill"`
	Watermark            *float64 `json:"watermark"`
	SpeedupRatio         *float64 `json:"speedup_ratio"`
	DPSize               *int     `json:"dp_size"`
	StartupTime          *float64 `json:"startup_time"`
	IsPrefill            *bool    `json:"is_prefill"`
	IsDecode             *bool    `json:"is_decode"`
	PlannerProfileData   *string  `json:"planner_profile_data"`
	EnableLocalIndexer   *bool    `json:"enable_local_indexer"`
	BootstrapPort        *int     `json:"bootstrap_port"`
}

// config folds the flags (and the engine-args file) into a mocker.Config,
// and returns the disaggregation mode the file sets ("" when it sets none).
func (m *mockerFlags) config() (mocker.Config, string, error) {
	c := mocker.DefaultConfig()
	c.NumGPUBlocks = *m.numGPUBlocks
	c.BlockSize = *m.blockSize
	c.MaxNumSeqs = *m.maxNumSeqs
	c.MaxNumBatchedTokens = *m.maxNumBatchedTokens
	c.EnablePrefixCaching = *m.prefixCaching && !*m.noPrefixCaching
	c.EnableChunkedPrefill = *m.chunkedPrefill && !*m.noChunkedPrefill
	c.Watermark = *m.watermark
	c.SpeedupRatio = *m.speedupRatio
	c.DPSize = *m.dpSize
	c.StartupTime = time.Duration(*m.startupTime * float64(time.Second))
	c.ContextLength = *m.contextLength
	c.Deterministic = *m.deterministic
	c.ExitAfterTokens = *m.exitAfter
	c.DropAfterTokens = *m.dropAfter
	c.StallAfterTokens = *m.stallAfter
	errs := append([]error(nil), m.errs...)
	if *m.numWorkers < 1 {
		errs = append(errs, fmt.Errorf("--num-workers %d: want at least 1", *m.numWorkers))
	}
	mode := ""
	if *m.extraEngineArgs != "" {
		var err error
		if mode, err = applyEngineArgs(&c, *m.extraEngineArgs); err != nil {
			errs = append(errs, err)
		}
	}
	if c.ContextLength < 0 {
		errs = append(errs, fmt.Errorf("--context-length %d must not be negative", c.ContextLength))
	}
	return c, mode, errors.Join(errs...)
}

func applyEngineArgs(c *mocker.Config, path string) (mode string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("--extra-engine-args: %w", err)
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	var a engineArgs
	if err := dec.Decode(&a); err != nil {
		return "", fmt.Errorf("--extra-engine-args %s: %w", path, err)
	}
	switch {
	case a.IsPrefill != nil && *a.IsPrefill && a.IsDecode != nil && *a.IsDecode:
		return "", fmt.Errorf("--extra-engine-args %s: is_prefill and is_decode exclude each other", path)
	case a.IsPrefill != nil && *a.IsPrefill:
		mode = backend.ModePrefill
	case a.IsDecode != nil && *a.IsDecode:
		mode = backend.ModeDecode
	}
	set := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	set(&c.NumGPUBlocks, a.NumGPUBlocks)
	set(&c.BlockSize, a.BlockSize)
	set(&c.MaxNumSeqs, a.MaxNumSeqs)
	set(&c.MaxNumBatchedTokens, a.MaxNumBatchedTokens)
	set(&c.DPSize, a.DPSize)
	if a.EnablePrefixCaching != nil {
		c.EnablePrefixCaching = *a.EnablePrefixCaching
	}
	if a.EnableChunkedPrefill != nil {
		c.EnableChunkedPrefill = *a.EnableChunkedPrefill
	}
	if a.Watermark != nil {
		c.Watermark = *a.Watermark
	}
	if a.SpeedupRatio != nil {
		c.SpeedupRatio = *a.SpeedupRatio
	}
	if a.StartupTime != nil {
		c.StartupTime = time.Duration(*a.StartupTime * float64(time.Second))
	}
	return mode, nil
}
