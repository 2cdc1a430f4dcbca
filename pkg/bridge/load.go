package bridge

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

// DefaultLoadInterval is the interval cmd/worker polls the engine's
// /metrics at by default (Config.LoadInterval).
const DefaultLoadInterval = time.Second

// scrapeTimeout bounds one GET of the engine's /metrics.
const scrapeTimeout = 2 * time.Second

// maxMetricsBody bounds what is read of a /metrics answer.
const maxMetricsBody = 16 << 20

// loadNames are the Prometheus names a dialect reports its load with.
// Each list is tried in order; the first family present wins.
type loadNames struct {
	running, waiting []string // requests decoding, requests queued
	usage            []string // KV-cache usage in [0, 1]
	hitRate          []string // prefix-cache hit rate in [0, 1]
	usedTokens       []string // KV-cache tokens in use (with totalTokens: blocks)
	totalTokens      []string // KV-cache capacity in tokens
}

// loadNamesOf returns the dialect's metric names: vLLM's V1
// PrometheusStatLogger (vllm/v1/metrics/loggers.py; gauges labelled
// model_name and engine, the dp rank), SGLang's SchedulerMetricsCollector
// (python/sglang/srt/metrics/collector.py) and llama-server's /metrics
// (tools/server, with --metrics).
func loadNamesOf(dialect string) loadNames {
	switch dialect {
	case DialectSGLang:
		return loadNames{
			running:     []string{"sglang:num_running_reqs"},
			waiting:     []string{"sglang:num_queue_reqs"},
			usage:       []string{"sglang:token_usage"},
			hitRate:     []string{"sglang:cache_hit_rate"},
			usedTokens:  []string{"sglang:num_used_tokens"},
			totalTokens: []string{"sglang:max_total_num_tokens"},
		}
	case DialectLlamaCpp:
		return loadNames{
			running: []string{"llamacpp:requests_processing"},
			waiting: []string{"llamacpp:requests_deferred"},
			usage:   []string{"llamacpp:kv_cache_usage_ratio"},
		}
	}
	return loadNames{
		running: []string{"vllm:num_requests_running"},
		waiting: []string{"vllm:num_requests_waiting"},
		usage:   []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"},
	}
}

// rankLabels name a series' data-parallel rank: vLLM's engine, SGLang's
// dp_rank. A series without either is rank 0.
var rankLabels = []string{"engine", "dp_rank"}

// loadSink is a publisher that can tell that the loads it is given go
// nowhere (the worker without an event plane).
type loadSink interface {
	PublishesLoad() bool
}

// startLoad polls the engine's /metrics every Config.LoadInterval until
// ctx ends and publishes each rank's load when it changed; e.bg counts
// the goroutine. A publisher whose loads go nowhere gets no poller: a
// scrape is not free for the engine (llama-server answers /metrics from
// its task queue, between decode steps). e.mu is held.
func (e *Engine) startLoad(ctx context.Context, workerID uint64) {
	pub := e.pub
	if s, ok := pub.(loadSink); ok && !s.PublishesLoad() {
		e.log.Info("bridge: the engine's /metrics is not polled: no event plane to publish its load on")
		return
	}
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		p := &loadPoller{e: e, workerID: workerID, pub: pub, last: map[uint32]kvblock.ForwardPassMetrics{}}
		t := time.NewTicker(e.cfg.LoadInterval)
		defer t.Stop()
		for {
			p.poll(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// loadPoller is the state of the load goroutine.
type loadPoller struct {
	e        *Engine
	workerID uint64
	pub      backend.EventPublisher
	last     map[uint32]kvblock.ForwardPassMetrics // the last published, per rank
	outage   bool                                  // the last scrape failed (logged once)
}

// poll scrapes once and publishes what changed. A failed scrape publishes
// nothing; the first failure of an outage is logged, and so is the end of
// the outage.
func (p *loadPoller) poll(ctx context.Context) {
	loads, err := p.e.scrapeLoad(ctx)
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		if !p.outage {
			p.outage = true
			p.e.log.Warn("bridge: cannot read the engine's load metrics; KV-aware routing gets no load from this worker until they answer again",
				"dialect", p.e.cfg.Dialect, "url", p.e.base+"/metrics", "err", err)
		}
		return
	}
	if p.outage {
		p.outage = false
		clear(p.last) // publish everything afresh
		p.e.log.Info("bridge: the engine's load metrics answer again", "dialect", p.e.cfg.Dialect)
	}
	if p.pub == nil {
		return
	}
	for rank, m := range loads {
		if last, ok := p.last[rank]; ok && sameLoad(last, m) {
			continue
		}
		p.last[rank] = m
		if err := p.pub.PublishLoad(ctx, int(rank), kvblock.LoadEvent{WorkerID: p.workerID, Data: m}); err != nil && ctx.Err() == nil {
			p.e.log.Warn("bridge: publish load", "rank", rank, "err", err)
		}
	}
}

// sameLoad reports whether a and b carry the same numbers.
func sameLoad(a, b kvblock.ForwardPassMetrics) bool {
	return a.KVStats == b.KVStats &&
		a.WorkerStats.RequestActiveSlots == b.WorkerStats.RequestActiveSlots &&
		a.WorkerStats.RequestTotalSlots == b.WorkerStats.RequestTotalSlots &&
		a.WorkerStats.NumRequestsWaiting == b.WorkerStats.NumRequestsWaiting
}

// scrapeLoad reads the engine's /metrics and returns the load of each
// rank found in it.
func (e *Engine) scrapeLoad(ctx context.Context) (map[uint32]kvblock.ForwardPassMetrics, error) {
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	resp, err := e.get(ctx, "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(io.LimitReader(resp.Body, maxMetricsBody))
	if err != nil {
		return nil, fmt.Errorf("bridge: parse /metrics: %w", err)
	}
	loads := loadOf(fams, loadNamesOf(e.cfg.Dialect), e.cfg.KVBlockSize)
	if len(loads) == 0 {
		return nil, fmt.Errorf("bridge: /metrics has none of %v (llama.cpp needs --metrics; SGLang --enable-metrics)", loadNamesOf(e.cfg.Dialect).running)
	}
	return loads, nil
}

// loadOf builds each rank's ForwardPassMetrics from the families: the
// request gauges, the KV usage fraction, and KV blocks when the engine
// tells its capacity (vLLM: cache_config_info's num_gpu_blocks; SGLang:
// tokens over blockSize). A rank appears when its running-requests gauge
// does.
func loadOf(fams map[string]*dto.MetricFamily, names loadNames, blockSize int) map[uint32]kvblock.ForwardPassMetrics {
	running := values(fams, names.running)
	if len(running) == 0 {
		return nil
	}
	waiting := values(fams, names.waiting)
	usage := values(fams, names.usage)
	hitRate := values(fams, names.hitRate)
	usedTokens := values(fams, names.usedTokens)
	totalTokens := values(fams, names.totalTokens)
	gpuBlocks := vllmGPUBlocks(fams)
	loads := make(map[uint32]kvblock.ForwardPassMetrics, len(running))
	for rank, run := range running {
		dp := rank
		m := kvblock.ForwardPassMetrics{WorkerStats: kvblock.WorkerStats{
			DataParallelRank:   &dp,
			RequestActiveSlots: count(run),
			NumRequestsWaiting: count(waiting[rank]),
		}}
		u := clamp01(usage[rank])
		var total, used uint64
		switch {
		case gpuBlocks[rank] > 0:
			total = gpuBlocks[rank]
			used = uint64(math.Round(u * float64(total)))
		case blockSize > 0 && totalTokens[rank] > 0:
			total = count(totalTokens[rank]) / uint64(blockSize)
			used = uint64(math.Round(u * float64(total)))
			if t, ok := usedTokens[rank]; ok {
				used = (count(t) + uint64(blockSize) - 1) / uint64(blockSize)
			}
		}
		if total > 0 {
			used = min(used, total)
			if _, ok := usage[rank]; !ok {
				u = float64(used) / float64(total)
			}
		}
		m.KVStats = kvblock.KVStats{
			KVActiveBlocks:        used,
			KVTotalBlocks:         total,
			GPUCacheUsagePerc:     float32(u),
			GPUPrefixCacheHitRate: float32(clamp01(hitRate[rank])),
		}
		loads[rank] = m
	}
	return loads
}

// values returns the value of the first family of names present, per
// rank; several series of one rank (other labels) give their largest.
func values(fams map[string]*dto.MetricFamily, names []string) map[uint32]float64 {
	for _, n := range names {
		f := fams[n]
		if f == nil || len(f.GetMetric()) == 0 {
			continue
		}
		out := map[uint32]float64{}
		for _, m := range f.GetMetric() {
			v, ok := sampleValue(m)
			if !ok {
				continue
			}
			r := rankOf(m)
			if prev, seen := out[r]; !seen || v > prev {
				out[r] = v
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// vllmGPUBlocks reads vLLM's cache_config_info num_gpu_blocks label, per
// rank (an info series without an engine label applies to rank 0).
func vllmGPUBlocks(fams map[string]*dto.MetricFamily) map[uint32]uint64 {
	f := fams["vllm:cache_config_info"]
	if f == nil {
		return nil
	}
	out := map[uint32]uint64{}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() != "num_gpu_blocks" {
				continue
			}
			if n, err := strconv.ParseUint(l.GetValue(), 10, 64); err == nil {
				out[rankOf(m)] = n
			}
		}
	}
	return out
}

// sampleValue is a gauge's, counter's or untyped series' value.
func sampleValue(m *dto.Metric) (float64, bool) {
	var v float64
	switch {
	case m.Gauge != nil:
		v = m.GetGauge().GetValue()
	case m.Untyped != nil:
		v = m.GetUntyped().GetValue()
	case m.Counter != nil:
		v = m.GetCounter().GetValue()
	default:
		return 0, false
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// rankOf reads a series' data-parallel rank; 0 without a rank label.
func rankOf(m *dto.Metric) uint32 {
	for _, l := range m.GetLabel() {
		for _, name := range rankLabels {
			if l.GetName() == name {
				if r, err := strconv.ParseUint(l.GetValue(), 10, 32); err == nil {
					return uint32(r)
				}
			}
		}
	}
	return 0
}

func count(v float64) uint64 {
	if !(v > 0) {
		return 0
	}
	return uint64(math.Round(v))
}

func clamp01(v float64) float64 {
	return min(max(v, 0), 1)
}
