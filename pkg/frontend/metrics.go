package frontend

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dynamo-go/dynamo/pkg/pipeline"
)

// Values of the endpoint label.
const (
	EndpointChat        = "chat_completions"
	EndpointCompletions = "completions"
	EndpointEmbeddings  = "embeddings"
)

// Values of the error_type label (spec §6.1). A successful request has
// error_type "".
const (
	ErrValidation      = "validation"
	ErrNotFound        = "not_found"
	ErrOverload        = "overload"
	ErrUnavailable     = "unavailable"
	ErrCancelled       = "cancelled"
	ErrResponseTimeout = "response_timeout"
	ErrInternal        = "internal"
	ErrNotImplemented  = "not_implemented"
)

// UnknownModel is the model label of a request whose model is not served.
// It keeps label cardinality bounded.
const UnknownModel = "unknown_model"

// defaultMetricsPrefix is the metric name prefix when MetricsConfig.Prefix
// is empty.
const defaultMetricsPrefix = "dynamo_frontend"

// Values of the request_type and status labels.
const (
	requestTypeStream = "stream"
	requestTypeUnary  = "unary"
	statusSuccess     = "success"
	statusError       = "error"
)

// MetricsConfig configures NewMetrics.
type MetricsConfig struct {
	// Prefix starts every metric name (prefix + "_" + name). Empty means
	// "dynamo_frontend". It is sanitised into a valid Prometheus name:
	// characters outside [a-zA-Z0-9_:] become '_', and '_' is prepended if
	// the result starts with a digit or ':'. A prefix with no valid
	// character at all falls back to "dynamo_frontend".
	Prefix string
	// Buckets overrides the generated buckets of the histograms it names
	// (HistogramTTFT, ...); the others keep the defaults of spec §6.5.
	// cmd/frontend reads them with BucketsFromEnv.
	Buckets map[string]BucketRange
}

// Metrics holds the frontend's Prometheus metrics (spec §6.1, §6.2). Build
// it with NewMetrics. It is safe for concurrent use. A nil *Metrics records
// nothing: its methods are no-ops and Start returns a nil *Guard, whose
// methods are no-ops too. It publishes the served models for the
// pipeline's registry (SetModel, RemoveModel).
type Metrics struct {
	requests      *prometheus.CounterVec // model, endpoint, request_type, status, error_type
	started       *prometheus.CounterVec // model, endpoint, request_type
	cancellations *prometheus.CounterVec // model, endpoint, request_type
	rejections    *prometheus.CounterVec // model, endpoint
	disconnected  prometheus.Gauge

	inflight     *prometheus.GaugeVec // model
	active       *prometheus.GaugeVec // model
	queued       *prometheus.GaugeVec // model
	duration     *prometheus.HistogramVec
	isl          *prometheus.HistogramVec
	osl          *prometheus.HistogramVec
	cached       *prometheus.HistogramVec
	ttft         *prometheus.HistogramVec
	itl          *prometheus.HistogramVec
	outputTokens *prometheus.CounterVec
	tokenizer    *prometheus.HistogramVec // operation
	storeErrors  *prometheus.CounterVec   // op: get, put, delete

	ready               *prometheus.GaugeVec // model
	contextLength       *prometheus.GaugeVec
	kvCacheBlockSize    *prometheus.GaugeVec
	totalKVBlocks       *prometheus.GaugeVec
	maxNumSeqs          *prometheus.GaugeVec
	maxNumBatchedTokens *prometheus.GaugeVec
	migrationLimit      *prometheus.GaugeVec

	byModel sync.Map // model -> *modelSeries
}

var _ pipeline.ModelMetrics = (*Metrics)(nil)

// modelSeries are the per-request series of one model, resolved once so
// that Start does a single map lookup for them.
type modelSeries struct {
	inflight, active, queued              prometheus.Gauge
	duration, isl, osl, cached, ttft, itl prometheus.Observer
	outputTokens                          prometheus.Counter
}

// NewMetrics builds the frontend metrics and registers them on reg. It
// fails if reg is nil, if a bucket override in cfg.Buckets is invalid (the
// error names the variable), or if registration fails (for example because
// the names are already registered).
func NewMetrics(reg prometheus.Registerer, cfg MetricsConfig) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("frontend: NewMetrics: nil prometheus.Registerer")
	}
	var durationB, islB, oslB, ttftB, itlB []float64
	for _, h := range []struct {
		name string
		dst  *[]float64
	}{
		{HistogramRequestDuration, &durationB},
		{HistogramInputSequence, &islB},
		{HistogramOutputSequence, &oslB},
		{HistogramTTFT, &ttftB},
		{HistogramITL, &itlB},
	} {
		buckets, err := histogramBuckets(h.name, cfg.Buckets)
		if err != nil {
			return nil, err
		}
		*h.dst = buckets
	}

	prefix := MetricsPrefix(cfg.Prefix)
	name := func(s string) string { return prefix + "_" + s }
	counter := func(n, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name(n), Help: help}, labels)
	}
	gauge := func(n, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name(n), Help: help}, []string{"model"})
	}
	histogram := func(n, help string, buckets []float64, label string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name(n), Help: help, Buckets: buckets}, []string{label})
	}

	m := &Metrics{
		requests: counter("requests_total", "Requests processed, counted when the request ends.",
			"model", "endpoint", "request_type", "status", "error_type"),
		started: counter("requests_started_total", "Requests accepted by an HTTP handler.",
			"model", "endpoint", "request_type"),
		cancellations: counter("model_cancellation_total", "Requests cancelled because the client disconnected.",
			"model", "endpoint", "request_type"),
		rejections: counter("model_rejection_total", "Requests rejected because of overload.",
			"model", "endpoint"),
		disconnected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: name("disconnected_clients"), Help: "Client disconnects detected.",
		}),
		inflight:     gauge("inflight_requests", "Requests between handler start and the end of the response."),
		active:       gauge("active_requests", "Requests between handler start and the end of the response (same as inflight_requests)."),
		queued:       gauge("queued_requests", "Requests between handler start and their first output token."),
		duration:     histogram("request_duration_seconds", "Request duration in seconds.", durationB, "model"),
		isl:          histogram("input_sequence_tokens", "Input sequence length in tokens.", islB, "model"),
		osl:          histogram("output_sequence_tokens", "Output sequence length in tokens.", oslB, "model"),
		cached:       histogram("cached_tokens", "Cached (prefix cache hit) prompt tokens per request.", islB, "model"),
		ttft:         histogram("time_to_first_token_seconds", "Time to first output token in seconds.", ttftB, "model"),
		itl:          histogram("inter_token_latency_seconds", "Inter-token latency in seconds, observed once per token.", itlB, "model"),
		outputTokens: counter("output_tokens_total", "Output tokens generated, counted per chunk.", "model"),
		tokenizer: histogram("tokenizer_latency_ms", "Tokenizer latency in milliseconds.",
			tokenizerLatencyBucketsMs, "operation"),
		storeErrors: counter("responses_store_errors_total", "Operations of the Responses API's response store that failed (store down, full, or a record too large), by op: get, put, delete.", "op"),

		ready:               gauge("model_ready", "1 while the model has ready workers."),
		contextLength:       gauge("model_context_length", "Maximum context length in tokens for a worker serving the model."),
		kvCacheBlockSize:    gauge("model_kv_cache_block_size", "KV cache block size in tokens for a worker serving the model."),
		totalKVBlocks:       gauge("model_total_kv_blocks", "Total KV cache blocks available for a worker serving the model."),
		maxNumSeqs:          gauge("model_max_num_seqs", "Maximum number of sequences for a worker serving the model."),
		maxNumBatchedTokens: gauge("model_max_num_batched_tokens", "Maximum number of batched tokens for a worker serving the model."),
		migrationLimit:      gauge("model_migration_limit", "Request migration limit for a worker serving the model."),
	}
	for _, c := range []prometheus.Collector{
		m.requests, m.started, m.cancellations, m.rejections, m.disconnected,
		m.inflight, m.active, m.queued, m.duration, m.isl, m.osl, m.cached, m.ttft, m.itl,
		m.outputTokens, m.tokenizer, m.storeErrors,
		m.ready, m.contextLength, m.kvCacheBlockSize, m.totalKVBlocks, m.maxNumSeqs,
		m.maxNumBatchedTokens, m.migrationLimit,
	} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("frontend: registering metrics: %w", err)
		}
	}
	return m, nil
}

// StoreError counts a failed operation of the response store: op is
// get, put or delete.
func (m *Metrics) StoreError(op string) {
	if m == nil {
		return
	}
	m.storeErrors.WithLabelValues(op).Inc()
}

// MetricsPrefix turns p into a valid Prometheus metric name prefix, as
// NewMetrics does with MetricsConfig.Prefix ("" gives dynamo_frontend).
func MetricsPrefix(p string) string {
	if p == "" {
		return defaultMetricsPrefix
	}
	b := []byte(p)
	valid := false
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == ':':
			valid = true
		case c == '_':
		default:
			b[i] = '_'
		}
	}
	if !valid {
		return defaultMetricsPrefix
	}
	if c := b[0]; ('0' <= c && c <= '9') || c == ':' {
		return "_" + string(b)
	}
	return string(b)
}

// series returns the resolved per-model series of model.
func (m *Metrics) series(model string) *modelSeries {
	if s, ok := m.byModel.Load(model); ok {
		return s.(*modelSeries)
	}
	s, _ := m.byModel.LoadOrStore(model, &modelSeries{
		inflight:     m.inflight.WithLabelValues(model),
		active:       m.active.WithLabelValues(model),
		queued:       m.queued.WithLabelValues(model),
		duration:     m.duration.WithLabelValues(model),
		isl:          m.isl.WithLabelValues(model),
		osl:          m.osl.WithLabelValues(model),
		cached:       m.cached.WithLabelValues(model),
		ttft:         m.ttft.WithLabelValues(model),
		itl:          m.itl.WithLabelValues(model),
		outputTokens: m.outputTokens.WithLabelValues(model),
	})
	return s.(*modelSeries)
}

// Rejected counts one overload rejection (model_rejection_total).
func (m *Metrics) Rejected(model, endpoint string) {
	if m == nil {
		return
	}
	m.rejections.WithLabelValues(modelLabel(model), endpoint).Inc()
}

// SetModel publishes c in the six model_* configuration gauges of model and
// sets model_ready to 1. Call it when the model is added and on each
// refresh.
func (m *Metrics) SetModel(model string, c pipeline.ModelConfig) {
	if m == nil {
		return
	}
	m.contextLength.WithLabelValues(model).Set(float64(c.ContextLength))
	m.kvCacheBlockSize.WithLabelValues(model).Set(float64(c.KVCacheBlockSize))
	m.totalKVBlocks.WithLabelValues(model).Set(float64(c.TotalKVBlocks))
	m.maxNumSeqs.WithLabelValues(model).Set(float64(c.MaxNumSeqs))
	m.maxNumBatchedTokens.WithLabelValues(model).Set(float64(c.MaxNumBatchedTokens))
	m.migrationLimit.WithLabelValues(model).Set(float64(c.MigrationLimit))
	m.ready.WithLabelValues(model).Set(1)
}

// RemoveModel deletes model's series from the configuration gauges and
// model_ready. Request counters, histograms and the inflight, active and
// queued gauges keep their series.
func (m *Metrics) RemoveModel(model string) {
	if m == nil {
		return
	}
	for _, g := range []*prometheus.GaugeVec{
		m.contextLength, m.kvCacheBlockSize, m.totalKVBlocks, m.maxNumSeqs,
		m.maxNumBatchedTokens, m.migrationLimit, m.ready,
	} {
		g.DeleteLabelValues(model)
	}
}

// ObserveTokenizer records one tokenizer call of duration d in
// tokenizer_latency_ms; op is "tokenize" or "detokenize".
func (m *Metrics) ObserveTokenizer(op string, d time.Duration) {
	if m == nil {
		return
	}
	m.tokenizer.WithLabelValues(op).Observe(float64(d) / float64(time.Millisecond))
}

func modelLabel(model string) string {
	if model == "" {
		return UnknownModel
	}
	return model
}

// Guard is the accounting of one request (spec §6.6), from Start to
// Finish. Its status is error/internal until OK is called, so every exit
// path that reaches Finish is counted; use it as
//
//	g := m.Start(model, EndpointChat, stream)
//	defer g.Finish()
//
// A Guard is safe for concurrent use (Cancelled may come from another
// goroutine than Chunk). Calls after Finish are ignored.
type Guard struct {
	m        *Metrics
	s        *modelSeries
	model    string
	endpoint string
	reqType  string
	start    time.Time

	mu         sync.Mutex
	last       time.Time // time of the previous Chunk
	chunks     int
	osl        int
	queued     bool // still counted in queued_requests
	firstToken bool
	cached     bool
	cancelled  bool
	finished   bool
	status     string
	errorType  string
}

// Start begins the accounting of one request: requests_started_total +1,
// inflight_requests, active_requests and queued_requests +1, and the
// duration timer starts. model is the canonical model name or UnknownModel
// ("" counts as UnknownModel); endpoint is EndpointChat,
// EndpointCompletions or EndpointEmbeddings; stream selects request_type
// "stream" or "unary".
func (m *Metrics) Start(model, endpoint string, stream bool) *Guard {
	if m == nil {
		return nil
	}
	model = modelLabel(model)
	reqType := requestTypeUnary
	if stream {
		reqType = requestTypeStream
	}
	s := m.series(model)
	m.started.WithLabelValues(model, endpoint, reqType).Inc()
	s.inflight.Inc()
	s.active.Inc()
	s.queued.Inc()
	return &Guard{
		m: m, s: s, model: model, endpoint: endpoint, reqType: reqType,
		start: time.Now(), queued: true, status: statusError, errorType: ErrInternal,
	}
}

// FirstToken records the arrival of the first output token, once: the
// request leaves queued_requests, the time since Start is observed as TTFT
// and isl as the input sequence length.
func (g *Guard) FirstToken(isl int) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.finished || g.firstToken {
		return
	}
	g.firstToken = true
	g.releaseQueued()
	g.s.ttft.Observe(time.Since(g.start).Seconds())
	g.s.isl.Observe(float64(isl))
}

// Chunk records a response chunk carrying tokens output tokens; chunks
// with tokens <= 0 are ignored. It adds tokens to output_tokens_total and
// to the output sequence length. From the second such chunk on, the time
// since the previous one divided by tokens is observed as inter-token
// latency once per token. Chunk does not imply FirstToken: call FirstToken
// first for the first chunk.
func (g *Guard) Chunk(tokens int) {
	if g == nil || tokens <= 0 {
		return
	}
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.finished {
		return
	}
	g.s.outputTokens.Add(float64(tokens))
	if g.chunks > 0 {
		itl := now.Sub(g.last).Seconds() / float64(tokens)
		for range tokens {
			g.s.itl.Observe(itl)
		}
	}
	g.chunks++
	g.osl += tokens
	g.last = now
}

// Cached records, once, the number of prompt tokens the engine found in its
// prefix cache (cached_tokens).
func (g *Guard) Cached(n int) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.finished || g.cached {
		return
	}
	g.cached = true
	g.s.cached.Observe(float64(n))
}

// Fail sets the status to error with error_type errorType (one of the Err*
// constants; "" means ErrInternal). The last of Fail, Cancelled and OK
// wins.
func (g *Guard) Fail(errorType string) {
	if g == nil {
		return
	}
	if errorType == "" {
		errorType = ErrInternal
	}
	g.setStatus(statusError, errorType)
}

// Cancelled records that the client went away: the status becomes
// error/cancelled and, on the first call only, disconnected_clients and
// model_cancellation_total go up by one.
func (g *Guard) Cancelled() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.finished {
		return
	}
	g.status, g.errorType = statusError, ErrCancelled
	if g.cancelled {
		return
	}
	g.cancelled = true
	g.m.disconnected.Inc()
	g.m.cancellations.WithLabelValues(g.model, g.endpoint, g.reqType).Inc()
}

// OK sets the status to success (error_type ""). For a stream, call it only
// once the stream has ended normally.
func (g *Guard) OK() {
	if g == nil {
		return
	}
	g.setStatus(statusSuccess, "")
}

func (g *Guard) setStatus(status, errorType string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.finished {
		g.status, g.errorType = status, errorType
	}
}

// Finish ends the accounting: requests_total +1 with the final status and
// error_type, the duration since Start observed, inflight_requests and
// active_requests -1, queued_requests -1 if FirstToken never came, and the
// output sequence length observed if it is > 0. Only the first call counts.
func (g *Guard) Finish() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.finished {
		return
	}
	g.finished = true
	g.m.requests.WithLabelValues(g.model, g.endpoint, g.reqType, g.status, g.errorType).Inc()
	g.s.duration.Observe(time.Since(g.start).Seconds())
	g.s.inflight.Dec()
	g.s.active.Dec()
	g.releaseQueued()
	if g.osl > 0 {
		g.s.osl.Observe(float64(g.osl))
	}
}

// releaseQueued takes the request out of queued_requests if it is still
// there. g.mu must be held.
func (g *Guard) releaseQueued() {
	if g.queued {
		g.queued = false
		g.s.queued.Dec()
	}
}
