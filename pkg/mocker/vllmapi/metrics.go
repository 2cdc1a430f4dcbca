package vllmapi

import (
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dynamo-go/dynamo/pkg/mocker"
)

// metrics are the vLLM-named metrics the mocker can give: scheduler gauges
// read from the engine at scrape time, token and request counters
// counted by the server. Every series has the labels model_name and
// engine ("0": one engine), as vLLM's V1 engine reports them.
type metrics struct {
	promptTokens     prometheus.Counter
	generationTokens prometheus.Counter
	success          *prometheus.CounterVec // by finished_reason
}

func newMetrics(reg prometheus.Registerer, cfg Config, eng *mocker.Engine) (*metrics, error) {
	labels := prometheus.Labels{"model_name": cfg.Model, "engine": "0"}
	gauge := func(name, help string, f func(mocker.Stats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels},
			func() float64 { return f(eng.Stats()) })
	}
	usage := func(s mocker.Stats) float64 {
		if s.TotalBlocks == 0 {
			return 0
		}
		return float64(s.ActiveBlocks) / float64(s.TotalBlocks)
	}
	m := &metrics{
		promptTokens: prometheus.NewCounter(prometheus.CounterOpts{Name: "vllm:prompt_tokens_total",
			Help: "Number of prefill tokens processed.", ConstLabels: labels}),
		generationTokens: prometheus.NewCounter(prometheus.CounterOpts{Name: "vllm:generation_tokens_total",
			Help: "Number of generation tokens processed.", ConstLabels: labels}),
		success: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:request_success_total",
			Help: "Count of successfully processed requests.", ConstLabels: labels}, []string{"finished_reason"}),
	}
	cacheInfo := prometheus.NewGauge(prometheus.GaugeOpts{Name: "vllm:cache_config_info",
		Help: "Information of the LLMEngine CacheConfig",
		ConstLabels: prometheus.Labels{
			"block_size":            strconv.Itoa(cfg.BlockSize),
			"num_gpu_blocks":        strconv.Itoa(cfg.NumGPUBlocks),
			"enable_prefix_caching": "True",
			"model_name":            cfg.Model,
			"engine":                "0",
		}})
	cacheInfo.Set(1)
	for _, c := range []prometheus.Collector{
		gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
			func(s mocker.Stats) float64 { return float64(s.Running) }),
		gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
			func(s mocker.Stats) float64 { return float64(s.Waiting) }),
		gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", usage),
		gauge("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage (deprecated name of vllm:kv_cache_usage_perc).", usage),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "vllm:num_preemptions_total",
			Help: "Cumulative number of preemption from the engine.", ConstLabels: labels},
			func() float64 { return float64(eng.Stats().Preemptions) }),
		m.promptTokens, m.generationTokens, m.success, cacheInfo,
	} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("vllmapi: metrics: %w", err)
		}
	}
	return m, nil
}
