package mocker

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrNoKVShape is wrapped by KVBytesPerToken's error when config.json does
// not give the attention shape (layers, KV heads, head size).
var ErrNoKVShape = errors.New("mocker: config.json does not give the KV cache shape")

// kvShape is the part of a Hugging Face config.json that sizes the KV
// cache; multimodal models nest it in text_config.
type kvShape struct {
	Layers     int    `json:"num_hidden_layers"`
	KVHeads    int    `json:"num_key_value_heads"`
	Heads      int    `json:"num_attention_heads"`
	HeadDim    int    `json:"head_dim"`
	Hidden     int    `json:"hidden_size"`
	TorchDType string `json:"torch_dtype"`
	DType      string `json:"dtype"` // newer transformers
}

// KVBytesPerToken returns the size of one token's KV cache,
// num_hidden_layers · 2 · num_key_value_heads · head_dim · dtype bytes,
// from a model's config.json (or its text_config): num_key_value_heads
// defaults to num_attention_heads, head_dim to hidden_size /
// num_attention_heads. kvCacheDType is the KV cache's type: "auto" (or
// "") takes the model's torch_dtype (2 bytes when absent); fp8 types are
// 1 byte, float16/bfloat16 2, float32 4. Missing shape fields are an
// error wrapping ErrNoKVShape.
func KVBytesPerToken(configJSON []byte, kvCacheDType string) (int, error) {
	var cfg struct {
		kvShape
		TextConfig *kvShape `json:"text_config"`
	}
	if err := json.Unmarshal(configJSON, &cfg); err != nil {
		return 0, fmt.Errorf("mocker: config.json: %w", err)
	}
	s := cfg.kvShape
	if s.Layers == 0 && cfg.TextConfig != nil {
		s = *cfg.TextConfig
	}
	if s.KVHeads == 0 {
		s.KVHeads = s.Heads
	}
	if s.HeadDim == 0 && s.Heads > 0 {
		s.HeadDim = s.Hidden / s.Heads
	}
	if s.Layers <= 0 || s.KVHeads <= 0 || s.HeadDim <= 0 {
		return 0, fmt.Errorf("%w (num_hidden_layers %d, num_key_value_heads %d, head_dim %d)", ErrNoKVShape, s.Layers, s.KVHeads, s.HeadDim)
	}
	dtype := kvCacheDType
	if dtype == "" || dtype == "auto" {
		dtype = s.TorchDType
		if dtype == "" {
			dtype = s.DType
		}
		if dtype == "" {
			dtype = "float16"
		}
	}
	n, err := DTypeBytes(dtype)
	if err != nil {
		return 0, err
	}
	return s.Layers * 2 * s.KVHeads * s.HeadDim * n, nil
}

// DTypeBytes is the size of one element of a KV cache type: fp8 types
// (fp8, fp8_e4m3, fp8_e5m2, float8_*) 1, float16, half, bfloat16 (fp16,
// bf16) 2, float32, float (fp32) 4.
func DTypeBytes(dtype string) (int, error) {
	d := strings.ToLower(strings.TrimPrefix(dtype, "torch."))
	switch {
	case strings.HasPrefix(d, "fp8"), strings.HasPrefix(d, "float8"):
		return 1, nil
	}
	switch d {
	case "float16", "half", "fp16", "bfloat16", "bf16":
		return 2, nil
	case "float32", "float", "fp32":
		return 4, nil
	}
	return 0, fmt.Errorf("mocker: KV cache dtype %q: want auto, fp8, fp8_e4m3, fp8_e5m2, float16, bfloat16 or float32", dtype)
}

// transferTime is the simulated time to move the KV cache of tokens
// prompt tokens to the decode engine: tokens · KVBytesPerToken /
// (KVTransferBandwidth · 10^9 B/s), before the speedup ratio; 0 when
// either is unset.
func (c *Config) transferTime(tokens int) time.Duration {
	if c.KVBytesPerToken <= 0 || c.KVTransferBandwidth <= 0 {
		return 0
	}
	seconds := float64(tokens) * float64(c.KVBytesPerToken) / (c.KVTransferBandwidth * 1e9)
	return time.Duration(seconds * float64(time.Second))
}
