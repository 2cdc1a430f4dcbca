package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dynamo-go/dynamo/cmd/internal/envflag"
	"github.com/dynamo-go/dynamo/pkg/backend/worker"
	"github.com/dynamo-go/dynamo/pkg/mocker"
	"github.com/dynamo-go/dynamo/pkg/mocker/modeldir"
	"github.com/dynamo-go/dynamo/pkg/mocker/vllmapi"
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
	outputPerToken      *bool
	exitAfter           *int
	dropAfter           *int
	stallAfter          *int
	bootstrapPorts      *string
	kvTransferBandwidth *float64
	kvBytesPerToken     *int
	kvCacheDType        *string
	cannedResponses     *string
	loraLoadTime        *float64

	// canned are the entries of the --canned-responses file (config
	// reads it).
	canned       []modeldir.Canned
	embeddingDim *int

	// ports are the parsed bootstrap ports (config sets them): nil for
	// none, one base port, or one port per worker.
	ports []int

	// The vLLM API mode (--serve-vllm-api): no Dynamo runtime, one engine
	// behind vLLM's HTTP API and KV event stream.
	serveVLLM           *bool
	vllmHost            *string
	vllmPort            *int
	kvEventsPort        *int
	kvEventsReplayPort  *int
	kvEventsTopic       *string
	kvEventsBufferSteps *int
	kvEventsEncoding    *string
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
		outputPerToken:      boolFlag("output-per-token", false, "send every token as its own output, even those a stream that fell behind takes together (which vLLM merges, as the mocker does by default): the client gets a chunk per token"),
		exitAfter:           intFlag("exit-after-tokens", 0, "fault injection: exit the process after emitting this many tokens (0 = off)"),
		dropAfter:           intFlag("drop-after-tokens", 0, "fault injection: drop each stream after this many tokens (0 = off)"),
		stallAfter:          intFlag("stall-after-tokens", 0, "fault injection: stall each stream after this many tokens (0 = off)"),
		bootstrapPorts: s.String("bootstrap-ports", "", "prefill workers: listen for the bootstrap handoff (decode workers send an 8-byte little-endian room id, get the byte 0x01 when its prefill is done) "+
			"and publish it as the card's disaggregated_endpoint: a base port (worker i of --num-workers uses base+i; 0 = each picks a free port) "+
			"or one port per worker, comma-separated (default: none; the frontend hands over synchronously)", envName("bootstrap-ports")),
		kvTransferBandwidth: floatFlag("kv-transfer-bandwidth", d.KVTransferBandwidth, "prefill workers: GB/s at which a prompt's KV cache reaches the decode worker; a prefill answers after input_tokens*kv_bytes_per_token/bandwidth (divided by --speedup-ratio) (0 = no delay)"),
		kvBytesPerToken:     intFlag("kv-bytes-per-token", 0, "KV cache bytes per token for the transfer delay (default: num_hidden_layers*2*num_key_value_heads*head_dim*dtype bytes from the model's config.json; none when it lacks them)"),
		kvCacheDType:        s.String("kv-cache-dtype", "auto", "KV cache element type for --kv-bytes-per-token's default: auto (the model's torch_dtype), fp8, fp8_e4m3, fp8_e5m2, float16, bfloat16, float32", envName("kv-cache-dtype")),
		cannedResponses: s.String("canned-responses", "", "JSON file of scripted answers for testing the frontend's parsers: a list of {\"prompt_contains\": \"...\", \"text\": \"...\"} "+
			"(or \"texts\": one per choice index, the last repeated); a request whose prompt (decoded, special tokens kept) contains prompt_contains gets the first such entry's text, "+
			"encoded with the model's tokenizer (special tokens written in it become their ids), cut by max_tokens; requests with guided JSON or choice get an instance of the schema or the first choice", envName("canned-responses")),
		loraLoadTime: floatFlag("lora-load-time", d.LoraLoadTime.Seconds(), "seconds a LoRA adapter takes to load (divided by --speedup-ratio); the adapter's directory must hold adapter_config.json"),
		embeddingDim: intFlag("embedding-dim", 0, "serve an embedding model instead of a chat and completions one: /v1/embeddings answers with deterministic unit vectors of this many dimensions (0 = off)"),

		serveVLLM: boolFlag("serve-vllm-api", false, "serve one engine with vLLM's OpenAI-compatible HTTP API (token ids in and out) and KV event stream instead of registering as a Dynamo worker: "+
			"no runtime, discovery, NATS or etcd is used, --num-workers must be 1"),
		vllmHost:            s.String("vllm-host", vllmapi.DefaultHost, "--serve-vllm-api: host the HTTP server and the ZeroMQ sockets bind", envName("vllm-host")),
		vllmPort:            intFlag("vllm-port", 8000, "--serve-vllm-api: HTTP port (0 = a free port; the log line \"mocker: vLLM API listening\" gives addr)"),
		kvEventsPort:        intFlag("kv-events-port", -1, "--serve-vllm-api: publish KV events on a ZeroMQ PUB socket on this port, as vLLM's ZmqEventPublisher; data-parallel rank r on this port + r (-1 = off, 0 = free ports)"),
		kvEventsReplayPort:  intFlag("kv-events-replay-port", -1, "--serve-vllm-api: answer KV event replay requests on a ZeroMQ ROUTER socket on this port; rank r on this port + r (-1 = off, 0 = free ports)"),
		kvEventsTopic:       s.String("kv-events-topic", "", "--serve-vllm-api: topic frame of KV event messages (vLLM's default: empty)", envName("kv-events-topic")),
		kvEventsBufferSteps: intFlag("kv-events-buffer-steps", vllmapi.DefaultBufferSteps, "--serve-vllm-api: KV event batches kept for replay"),
		kvEventsEncoding:    s.String("kv-events-encoding", vllmapi.EncodingMap, "--serve-vllm-api: KV event layout: map (current vLLM: events are maps tagged by \"type\") or array (legacy array_like events)", envName("kv-events-encoding")),
	}
}

// vllmFlags are the flags only --serve-vllm-api reads.
var vllmFlags = []string{"vllm-host", "vllm-port", "kv-events-port", "kv-events-replay-port", "kv-events-topic", "kv-events-buffer-steps", "kv-events-encoding"}

// vllmConfig returns the vllmapi.Config of the flags (without the model's
// fields), and the problems of the vLLM API mode's flags: without
// --serve-vllm-api its flags must not be given.
func (m *mockerFlags) vllmConfig() (vllmapi.Config, error) {
	c := vllmapi.Config{Host: *m.vllmHost, Port: *m.vllmPort, KVEvents: vllmapi.KVEventsConfig{
		Port: *m.kvEventsPort, ReplayPort: *m.kvEventsReplayPort, Topic: *m.kvEventsTopic,
		BufferSteps: *m.kvEventsBufferSteps, Encoding: *m.kvEventsEncoding,
	}}
	var errs []error
	if !*m.serveVLLM {
		for _, name := range vllmFlags {
			if m.set.Given(name) {
				errs = append(errs, fmt.Errorf("--%s needs --serve-vllm-api", name))
			}
		}
		return c, errors.Join(errs...)
	}
	if *m.numWorkers != 1 {
		errs = append(errs, fmt.Errorf("--serve-vllm-api serves one engine: --num-workers %d must be 1", *m.numWorkers))
	}
	if *m.embeddingDim > 0 {
		errs = append(errs, errors.New("--serve-vllm-api serves completions, not embeddings (--embedding-dim)"))
	}
	if len(m.ports) > 0 {
		errs = append(errs, errors.New("--serve-vllm-api is not disaggregated: --bootstrap-ports does not apply"))
	}
	if *m.vllmPort < 0 || *m.vllmPort > 65535 {
		errs = append(errs, fmt.Errorf("--vllm-port %d: want 0..65535", *m.vllmPort))
	}
	for _, p := range []struct {
		name string
		v    int
	}{{"kv-events-port", *m.kvEventsPort}, {"kv-events-replay-port", *m.kvEventsReplayPort}} {
		if p.v < -1 || p.v > 65535 {
			errs = append(errs, fmt.Errorf("--%s %d: want -1 (off) or 0..65535", p.name, p.v))
		}
	}
	if *m.kvEventsReplayPort >= 0 && *m.kvEventsPort < 0 {
		errs = append(errs, errors.New("--kv-events-replay-port needs --kv-events-port"))
	}
	if *m.kvEventsBufferSteps < 1 {
		errs = append(errs, fmt.Errorf("--kv-events-buffer-steps %d: want at least 1", *m.kvEventsBufferSteps))
	}
	if e := *m.kvEventsEncoding; e != vllmapi.EncodingMap && e != vllmapi.EncodingArray {
		errs = append(errs, fmt.Errorf("--kv-events-encoding %q: want %s or %s", e, vllmapi.EncodingMap, vllmapi.EncodingArray))
	}
	return c, errors.Join(errs...)
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
	KVTransferBandwidth  *float64 `json:"kv_transfer_bandwidth"`
	KVBytesPerToken      *int     `json:"kv_bytes_per_token"`
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
	c.OutputPerToken = *m.outputPerToken
	c.ExitAfterTokens = *m.exitAfter
	c.DropAfterTokens = *m.dropAfter
	c.StallAfterTokens = *m.stallAfter
	c.KVTransferBandwidth = *m.kvTransferBandwidth
	c.KVBytesPerToken = *m.kvBytesPerToken
	c.EmbeddingDim = *m.embeddingDim
	c.LoraLoadTime = time.Duration(*m.loraLoadTime * float64(time.Second))
	errs := []error{m.set.Err()}
	if *m.numWorkers < 1 {
		errs = append(errs, fmt.Errorf("--num-workers %d: want at least 1", *m.numWorkers))
	}
	var err error
	if m.ports, err = parsePorts(*m.bootstrapPorts, *m.numWorkers); err != nil {
		errs = append(errs, err)
	}
	mode := ""
	if *m.extraEngineArgs != "" {
		var err error
		if mode, err = applyEngineArgs(&c, *m.extraEngineArgs, &m.ports); err != nil {
			errs = append(errs, err)
		}
	}
	if c.ContextLength < 0 {
		errs = append(errs, fmt.Errorf("--context-length %d must not be negative", c.ContextLength))
	}
	if c.KVTransferBandwidth < 0 {
		errs = append(errs, fmt.Errorf("--kv-transfer-bandwidth %v: want GB/s >= 0", c.KVTransferBandwidth))
	}
	if c.KVBytesPerToken < 0 {
		errs = append(errs, fmt.Errorf("--kv-bytes-per-token %d must not be negative", c.KVBytesPerToken))
	}
	if p := *m.cannedResponses; p != "" {
		var err error
		if m.canned, err = modeldir.ReadCanned(p); err != nil {
			errs = append(errs, err)
		}
	}
	if c.LoraLoadTime < 0 {
		errs = append(errs, fmt.Errorf("--lora-load-time %v must not be negative", *m.loraLoadTime))
	}
	if c.EmbeddingDim < 0 {
		errs = append(errs, fmt.Errorf("--embedding-dim %d: want a number of dimensions, or 0 for none", c.EmbeddingDim))
	}
	if d := *m.kvCacheDType; d != "auto" {
		if _, err := mocker.DTypeBytes(d); err != nil {
			errs = append(errs, fmt.Errorf("--kv-cache-dtype: %w", err))
		}
	}
	return c, mode, errors.Join(errs...)
}

// parsePorts reads --bootstrap-ports: "" (none), a base port, or one port
// per worker, comma-separated.
func parsePorts(v string, workers int) ([]int, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var ports []int
	for _, f := range strings.Split(v, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || p < 0 || p > 65535 {
			return nil, fmt.Errorf("--bootstrap-ports %q: want a port in 0..65535, or one per worker, comma-separated", v)
		}
		ports = append(ports, p)
	}
	if len(ports) > 1 && len(ports) != workers {
		return nil, fmt.Errorf("--bootstrap-ports %q: %d ports for %d workers (give one base port, or one port per worker)", v, len(ports), workers)
	}
	if len(ports) == 1 && ports[0] > 0 && ports[0]+workers-1 > 65535 {
		return nil, fmt.Errorf("--bootstrap-ports %d: base+%d is beyond 65535", ports[0], workers-1)
	}
	return ports, nil
}

// bootstrapPort is the bootstrap port of worker i (0: a free one), and
// whether the worker listens at all.
func (m *mockerFlags) bootstrapPort(i int) (int, bool) {
	switch {
	case len(m.ports) == 0:
		return 0, false
	case len(m.ports) > 1:
		return m.ports[i], true
	case m.ports[0] == 0:
		return 0, true
	}
	return m.ports[0] + i, true
}

func applyEngineArgs(c *mocker.Config, path string, ports *[]int) (mode string, err error) {
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
	if a.KVTransferBandwidth != nil {
		c.KVTransferBandwidth = *a.KVTransferBandwidth
	}
	set(&c.KVBytesPerToken, a.KVBytesPerToken)
	if p := a.BootstrapPort; p != nil {
		if *p < 0 || *p > 65535 {
			return "", fmt.Errorf("--extra-engine-args %s: bootstrap_port %d: want 0..65535", path, *p)
		}
		*ports = []int{*p}
	}
	return mode, nil
}
