package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/cmd/internal/envflag"
)

func parseMocker(t *testing.T, env map[string]string, args ...string) (*mockerFlags, error) {
	t.Helper()
	fs := flag.NewFlagSet("mocker", flag.ContinueOnError)
	m := registerMocker(envflag.New(fs, func(k string) string { return env[k] }))
	return m, fs.Parse(args)
}

func TestFlagsEnvAndEngineArgsFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "args.json")
	if err := os.WriteFile(file, []byte(`{"block_size": 16, "enable_prefix_caching": false, "startup_time": 1.5, "is_prefill": true}`), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := parseMocker(t, map[string]string{"DYN_MOCKER_SPEEDUP_RATIO": "100", "DYN_MOCKER_MAX_NUM_SEQS": "8"},
		"--max-num-seqs", "4", "--no-enable-chunked-prefill", "--extra-engine-args", file)
	if err != nil {
		t.Fatal(err)
	}
	c, mode, err := m.config()
	if err != nil {
		t.Fatal(err)
	}
	if c.SpeedupRatio != 100 || c.MaxNumSeqs != 4 {
		t.Errorf("speedup %v (env), max seqs %d (flag wins over env 8)", c.SpeedupRatio, c.MaxNumSeqs)
	}
	if c.BlockSize != 16 || c.EnablePrefixCaching || c.EnableChunkedPrefill || c.StartupTime != 1500*time.Millisecond || mode != "prefill" {
		t.Errorf("config %+v mode %q: the file's values must apply", c, mode)
	}
	if c.NumGPUBlocks != 16384 || c.Watermark != 0.01 {
		t.Errorf("defaults lost: blocks %d watermark %v", c.NumGPUBlocks, c.Watermark)
	}
}

func TestEngineArgsFileRejectsUnknownKeys(t *testing.T) {
	file := filepath.Join(t.TempDir(), "args.json")
	_ = os.WriteFile(file, []byte(`{"block_size": 16, "gpu_memory_utilization": 0.9}`), 0o600)
	m, _ := parseMocker(t, nil, "--extra-engine-args", file)
	if _, _, err := m.config(); err == nil || !strings.Contains(err.Error(), "gpu_memory_utilization") {
		t.Fatalf("unknown key: %v", err)
	}
	m, _ = parseMocker(t, map[string]string{"DYN_MOCKER_BLOCK_SIZE": "big"})
	if _, _, err := m.config(); err == nil || !strings.Contains(err.Error(), "DYN_MOCKER_BLOCK_SIZE") {
		t.Fatalf("bad env value: %v", err)
	}
}

func writeFile(path, contents string) error { return os.WriteFile(path, []byte(contents), 0o600) }

func TestEmbeddingDimFlag(t *testing.T) {
	m, err := parseMocker(t, map[string]string{"DYN_MOCKER_EMBEDDING_DIM": "256"})
	if err != nil {
		t.Fatal(err)
	}
	if c, _, err := m.config(); err != nil || c.EmbeddingDim != 256 {
		t.Errorf("DYN_MOCKER_EMBEDDING_DIM=256: embedding dim %d, %v", c.EmbeddingDim, err)
	}
	m, _ = parseMocker(t, nil)
	if c, _, _ := m.config(); c.EmbeddingDim != 0 {
		t.Errorf("default embedding dim %d, want 0 (off)", c.EmbeddingDim)
	}
}

func TestVLLMFlags(t *testing.T) {
	m, err := parseMocker(t, map[string]string{"DYN_MOCKER_KV_EVENTS_TOPIC": "kv"},
		"--serve-vllm-api", "--vllm-host", "0.0.0.0", "--vllm-port", "0", "--kv-events-port", "5557", "--kv-events-replay-port", "0",
		"--kv-events-encoding", "array", "--kv-events-buffer-steps", "7")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.config(); err != nil {
		t.Fatal(err)
	}
	c, err := m.vllmConfig()
	if err != nil {
		t.Fatal(err)
	}
	if c.Host != "0.0.0.0" || c.Port != 0 || c.KVEvents.Port != 5557 || c.KVEvents.ReplayPort != 0 || c.KVEvents.Topic != "kv" ||
		c.KVEvents.Encoding != "array" || c.KVEvents.BufferSteps != 7 {
		t.Errorf("config %+v", c)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kv-events-port", "5557"}, "--kv-events-port needs --serve-vllm-api"},
		{[]string{"--serve-vllm-api", "--num-workers", "2"}, "--num-workers 2 must be 1"},
		{[]string{"--serve-vllm-api", "--kv-events-replay-port", "0"}, "--kv-events-replay-port needs --kv-events-port"},
		{[]string{"--serve-vllm-api", "--kv-events-port", "0", "--kv-events-encoding", "json"}, `--kv-events-encoding "json"`},
		{[]string{"--serve-vllm-api", "--vllm-port", "70000"}, "--vllm-port 70000"},
		{[]string{"--serve-vllm-api", "--embedding-dim", "4"}, "not embeddings"},
	} {
		m, err := parseMocker(t, nil, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := m.config(); err != nil {
			t.Fatal(err)
		}
		if _, err := m.vllmConfig(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want %q", tc.args, err, tc.want)
		}
	}
}
