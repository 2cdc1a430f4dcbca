package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/dynamo-go/dynamo/internal/envflag"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/mocker"
)

// mockerFlags are the mocker's own flags (MockEngineArgs). Each can also be
// set with DYN_MOCKER_<FLAG> (e.g. DYN_MOCKER_SPEEDUP_RATIO=100); a flag on
// the command line wins.
type mockerFlags struct {
	set                 *envflag.Set
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

func registerMocker(s *envflag.Set) *mockerFlags {
	d := mocker.DefaultConfig()
	intFlag := func(name string, def int, help string) *int { return s.Int(name, def, help, envName(name)) }
	floatFlag := func(name string, def float64, help string) *float64 { return s.Float64(name, def, help, envName(name)) }
	boolFlag := func(name string, def bool, help string) *bool { return s.Bool(name, def, help, envName(name)) }
	return &mockerFlags{
		set:                 s,
		numGPUBlocks:        intFlag("num-gpu-blocks-override", d.NumGPUBlocks, "KV-cache capacity in blocks, per data-parallel rank"),
		blockSize:           intFlag("block-size", d.BlockSize, "tokens per KV-cache block"),
		maxNumSeqs:          intFlag("max-num-seqs", d.MaxNumSeqs, "maximum running sequences per rank"),
		maxNumBatchedTokens: intFlag("max-num-batched-tokens", d.MaxNumBatchedTokens, "token budget of one forward pass"),
		prefixCaching:       boolFlag("enable-prefix-caching", d.EnablePrefixCaching, "share cached prefix blocks between requests (and publish KV events)"),
		noPrefixCaching:     s.Bool("no-enable-prefix-caching", false, "turn prefix caching off"),
		chunkedPrefill:      boolFlag("enable-chunked-prefill", d.EnableChunkedPrefill, "split long prompts over several passes"),
		noChunkedPrefill:    s.Bool("no-enable-chunked-prefill", false, "turn chunked prefill off"),
		watermark:           floatFlag("watermark", d.Watermark, "fraction of KV blocks kept free when admitting requests"),
		speedupRatio:        floatFlag("speedup-ratio", d.SpeedupRatio, "divide every simulated duration by this (tests use 100 or more)"),
		dpSize:              intFlag("data-parallel-size", d.DPSize, "data-parallel ranks simulated by one worker"),
		startupTime:         floatFlag("startup-time", 0, "seconds to sleep before serving (a model load)"),
		contextLength:       intFlag("context-length", 0, "maximum prompt+output tokens (default: the model's config.json)"),
		extraEngineArgs:     s.String("extra-engine-args", "", "JSON file with MockEngineArgs (num_gpu_blocks, block_size, ...) overriding the flags", envName("extra-engine-args")),
		numWorkers:          intFlag("num-workers", 1, "mocker workers in this process, each with its own runtime and instance id"),
		deterministic:       boolFlag("deterministic", false, "output token at position i is a pure function of (request seed, i): same answer on every worker"),
		exitAfter:           intFlag("exit-after-tokens", 0, "fault injection: exit the process after emitting this many tokens (0 = off)"),
		dropAfter:           intFlag("drop-after-tokens", 0, "fault injection: drop each stream after this many tokens (0 = off)"),
		stallAfter:          intFlag("stall-after-tokens", 0, "fault injection: stall each stream after this many tokens (0 = off)"),
	}
}

// envName is the variable of a mocker flag: DYN_MOCKER_<FLAG>.
func envName(flagName string) string {
	return "DYN_MOCKER_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
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
	errs := []error{m.set.Err()}
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
		mode = worker.ModePrefill
	case a.IsDecode != nil && *a.IsDecode:
		mode = worker.ModeDecode
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
