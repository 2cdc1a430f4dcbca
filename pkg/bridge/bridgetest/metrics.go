package bridgetest

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// Load is what /metrics reports for one data-parallel rank.
type Load struct {
	// Rank is the vLLM engine label and the SGLang dp_rank label;
	// llama.cpp reports rank 0 only.
	Rank int
	// Running and Waiting are the requests decoding and queued.
	Running, Waiting int
	// Usage is the KV-cache usage in [0, 1].
	Usage float64
	// TotalBlocks is vLLM's cache_config_info num_gpu_blocks (0: no
	// such series); for SGLang, max_total_num_tokens is TotalBlocks*16
	// and num_used_tokens UsedTokens.
	TotalBlocks int
	// UsedTokens is SGLang's num_used_tokens.
	UsedTokens int
	// HitRate is SGLang's cache_hit_rate.
	HitRate float64
}

// metricsState is what /metrics serves.
type metricsState struct {
	mu     sync.Mutex
	loads  []Load
	status int // when not 0 and not 200: /metrics answers it
	calls  int
	legacy bool // vLLM: the old gpu_cache_usage_perc name only
}

// SetLoad sets the ranks /metrics reports (none: an empty answer).
func (s *Server) SetLoad(loads ...Load) {
	s.metrics.mu.Lock()
	defer s.metrics.mu.Unlock()
	s.metrics.loads = append([]Load(nil), loads...)
}

// SetMetricsStatus makes /metrics answer status with no metrics (0 or
// 200: serve them again), for scrape outages.
func (s *Server) SetMetricsStatus(status int) {
	s.metrics.mu.Lock()
	defer s.metrics.mu.Unlock()
	s.metrics.status = status
}

// SetLegacyVLLMNames makes a vLLM server report KV usage as
// vllm:gpu_cache_usage_perc (vLLM before V1) instead of
// vllm:kv_cache_usage_perc.
func (s *Server) SetLegacyVLLMNames(legacy bool) {
	s.metrics.mu.Lock()
	defer s.metrics.mu.Unlock()
	s.metrics.legacy = legacy
}

// MetricsCalls returns how many times /metrics was asked.
func (s *Server) MetricsCalls() int {
	s.metrics.mu.Lock()
	defer s.metrics.mu.Unlock()
	return s.metrics.calls
}

// handleMetrics writes the loads in the Prometheus text format, with the
// dialect's names and labels.
func (s *Server) handleMetrics(w http.ResponseWriter, _ *http.Request) {
	m := &s.metrics
	m.mu.Lock()
	m.calls++
	loads, status, legacy := append([]Load(nil), m.loads...), m.status, m.legacy
	m.mu.Unlock()
	if status != 0 && status != http.StatusOK {
		http.Error(w, "metrics unavailable", status)
		return
	}
	var b strings.Builder
	gauge := func(name string, val func(Load) float64, labels func(Load) string) {
		fmt.Fprintf(&b, "# HELP %s fake\n# TYPE %s gauge\n", name, name)
		for _, l := range loads {
			fmt.Fprintf(&b, "%s%s %v\n", name, labels(l), val(l))
		}
	}
	model := s.opts.Model
	switch s.dialect {
	case "vllm":
		lbl := func(l Load) string { return fmt.Sprintf(`{engine="%d",model_name="%s"}`, l.Rank, model) }
		gauge("vllm:num_requests_running", func(l Load) float64 { return float64(l.Running) }, lbl)
		gauge("vllm:num_requests_waiting", func(l Load) float64 { return float64(l.Waiting) }, lbl)
		usage := "vllm:kv_cache_usage_perc"
		if legacy {
			usage = "vllm:gpu_cache_usage_perc"
		}
		gauge(usage, func(l Load) float64 { return l.Usage }, lbl)
		fmt.Fprint(&b, "# HELP vllm:prompt_tokens_total fake\n# TYPE vllm:prompt_tokens_total counter\n")
		fmt.Fprintf(&b, "vllm:prompt_tokens_total{engine=\"0\",model_name=\"%s\"} 42\n", model)
		fmt.Fprint(&b, "# HELP vllm:cache_config_info fake\n# TYPE vllm:cache_config_info gauge\n")
		for _, l := range loads {
			if l.TotalBlocks > 0 {
				fmt.Fprintf(&b, "vllm:cache_config_info{block_size=\"16\",engine=\"%d\",num_gpu_blocks=\"%d\"} 1\n", l.Rank, l.TotalBlocks)
			}
		}
	case "sglang":
		lbl := func(l Load) string { return fmt.Sprintf(`{dp_rank="%d",model_name="%s",tp_rank="0"}`, l.Rank, model) }
		gauge("sglang:num_running_reqs", func(l Load) float64 { return float64(l.Running) }, lbl)
		gauge("sglang:num_queue_reqs", func(l Load) float64 { return float64(l.Waiting) }, lbl)
		gauge("sglang:token_usage", func(l Load) float64 { return l.Usage }, lbl)
		gauge("sglang:cache_hit_rate", func(l Load) float64 { return l.HitRate }, lbl)
		gauge("sglang:num_used_tokens", func(l Load) float64 { return float64(l.UsedTokens) }, lbl)
		gauge("sglang:max_total_num_tokens", func(l Load) float64 { return float64(l.TotalBlocks * 16) }, lbl)
	case "llamacpp":
		none := func(Load) string { return "" }
		if len(loads) > 1 {
			loads = loads[:1]
		}
		gauge("llamacpp:requests_processing", func(l Load) float64 { return float64(l.Running) }, none)
		gauge("llamacpp:requests_deferred", func(l Load) float64 { return float64(l.Waiting) }, none)
		gauge("llamacpp:kv_cache_usage_ratio", func(l Load) float64 { return l.Usage }, none)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = fmt.Fprint(w, b.String())
}
