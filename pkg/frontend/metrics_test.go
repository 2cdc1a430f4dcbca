package frontend

import (
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dynamo-go/dynamo/pkg/pipeline"
)

// sample is one gathered series: value for counters and gauges; count, sum
// and buckets for histograms.
type sample struct {
	value      float64
	count      uint64
	sum        float64
	bounds     []float64 // bucket upper bounds
	cumulative []uint64  // cumulative counts per bound
}

// gather returns every series in reg, by family name, then by labels
// rendered as "name=value,..." in label-name order (see labels).
func gather(t *testing.T, reg prometheus.Gatherer) map[string]map[string]sample {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := make(map[string]map[string]sample)
	for _, mf := range mfs {
		series := make(map[string]sample)
		for _, m := range mf.GetMetric() {
			var kv []string
			for _, lp := range m.GetLabel() {
				kv = append(kv, lp.GetName(), lp.GetValue())
			}
			var s sample
			switch {
			case m.GetCounter() != nil:
				s.value = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				s.value = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				h := m.GetHistogram()
				s.count, s.sum = h.GetSampleCount(), h.GetSampleSum()
				for _, b := range h.GetBucket() {
					if !math.IsInf(b.GetUpperBound(), 1) {
						s.bounds = append(s.bounds, b.GetUpperBound())
						s.cumulative = append(s.cumulative, b.GetCumulativeCount())
					}
				}
			}
			series[labels(kv...)] = s
		}
		out[mf.GetName()] = series
	}
	return out
}

// labels renders label name/value pairs sorted by name, as gather keys them.
func labels(kv ...string) string {
	var pairs []string
	for i := 0; i+1 < len(kv); i += 2 {
		pairs = append(pairs, kv[i]+"="+kv[i+1])
	}
	slices.Sort(pairs)
	return strings.Join(pairs, ",")
}

// values keeps only the value of each series of one family.
func values(series map[string]sample) map[string]float64 {
	out := make(map[string]float64, len(series))
	for k, s := range series {
		out[k] = s.value
	}
	return out
}

func newTestMetrics(t testing.TB, cfg MetricsConfig) (*Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg, cfg)
	if err != nil {
		t.Fatalf("NewMetrics: %v", err)
	}
	return m, reg
}

func envMap(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

const floatTolerance = 1e-9

func approx(a, b float64) bool { return math.Abs(a-b) < floatTolerance }

func TestLogBucketsSpecTable(t *testing.T) {
	// Spec §6.5, "resulting buckets".
	tests := []struct {
		name     string
		min, max float64
		count    int
		want     []float64
	}{
		{"request duration", 1, 512, 10, []float64{0, 2, 4, 8, 16, 32, 64, 130, 260, 510}},
		{"input sequence", 50, 128000, 12, []float64{0, 100, 210, 430, 870, 1800, 3600, 7400, 15000, 31000, 63000, 130000}},
		{"output sequence", 50, 32000, 10, []float64{0, 100, 210, 430, 880, 1800, 3700, 7600, 16000, 32000}},
		{"ttft", 0.001, 480, 18, []float64{0, 0.0022, 0.0047, 0.01, 0.022, 0.047, 0.1, 0.22, 0.47, 1, 2.2, 4.7, 10, 22, 48, 100, 220, 480}},
		{"itl", 0.001, 2, 13, []float64{0, 0.0019, 0.0035, 0.0067, 0.013, 0.024, 0.045, 0.084, 0.16, 0.3, 0.56, 1.1, 2}},
		{"count 1", 1, 10, 1, []float64{0}},
		{"count 0", 1, 10, 0, nil},
		{"dedup after rounding", 1, 1.05, 6, []float64{0, 1, 1.1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := LogBuckets(tt.min, tt.max, tt.count)
			// Exact float equality: the buckets must be the literals.
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("LogBuckets(%v, %v, %d) mismatch (-want +got):\n%s", tt.min, tt.max, tt.count, diff)
			}
		})
	}
}

func TestMetricsDefaultBuckets(t *testing.T) {
	m, reg := newTestMetrics(t, MetricsConfig{})
	g := m.Start("foo", EndpointChat, true)
	g.FirstToken(10)
	g.Chunk(1)
	g.Chunk(1)
	g.Cached(3)
	g.OK()
	g.Finish()
	m.ObserveTokenizer("tokenize", time.Millisecond)

	got := gather(t, reg)
	foo := labels("model", "foo")
	for _, tt := range []struct {
		name string
		key  string
		want []float64
	}{
		{"dynamo_frontend_request_duration_seconds", foo, LogBuckets(1, 512, 10)},
		{"dynamo_frontend_input_sequence_tokens", foo, LogBuckets(50, 128000, 12)},
		{"dynamo_frontend_cached_tokens", foo, LogBuckets(50, 128000, 12)},
		{"dynamo_frontend_output_sequence_tokens", foo, LogBuckets(50, 32000, 10)},
		{"dynamo_frontend_time_to_first_token_seconds", foo, LogBuckets(0.001, 480, 18)},
		{"dynamo_frontend_inter_token_latency_seconds", foo, LogBuckets(0.001, 2, 13)},
		{"dynamo_frontend_tokenizer_latency_ms", labels("operation", "tokenize"), []float64{0.5, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512}},
	} {
		s, ok := got[tt.name][tt.key]
		if !ok {
			t.Errorf("%s{%s} missing", tt.name, tt.key)
			continue
		}
		if diff := cmp.Diff(tt.want, s.bounds); diff != "" {
			t.Errorf("%s buckets mismatch (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestMetricsBucketEnvOverride(t *testing.T) {
	env := envMap(map[string]string{
		"DYN_METRICS_TTFT_MIN":             "0.01",
		"DYN_METRICS_TTFT_MAX":             "10",
		"DYN_METRICS_TTFT_COUNT":           "4",
		"DYN_METRICS_ITL_COUNT":            "3", // min and max keep their defaults
		"DYN_METRICS_INPUT_SEQUENCE_MAX":   "500",
		"DYN_METRICS_INPUT_SEQUENCE_COUNT": "2",
	})
	buckets, err := BucketsFromEnv(env)
	if err != nil {
		t.Fatal(err)
	}
	m, reg := newTestMetrics(t, MetricsConfig{Buckets: buckets})
	g := m.Start("foo", EndpointChat, true)
	g.FirstToken(10)
	g.Chunk(1)
	g.Chunk(1)
	g.Cached(3)
	g.Finish()

	got := gather(t, reg)
	foo := labels("model", "foo")
	for name, want := range map[string][]float64{
		"dynamo_frontend_time_to_first_token_seconds": {0, 0.1, 1, 10},
		"dynamo_frontend_inter_token_latency_seconds": LogBuckets(0.001, 2, 3),
		"dynamo_frontend_input_sequence_tokens":       {0, 500},
		"dynamo_frontend_cached_tokens":               {0, 500},
		"dynamo_frontend_request_duration_seconds":    LogBuckets(1, 512, 10),
	} {
		if diff := cmp.Diff(want, got[name][foo].bounds); diff != "" {
			t.Errorf("%s buckets mismatch (-want +got):\n%s", name, diff)
		}
	}
}

func TestMetricsBucketEnvErrors(t *testing.T) {
	tests := []struct {
		env     map[string]string
		wantVar string
	}{
		{map[string]string{"DYN_METRICS_TTFT_MIN": "abc"}, "DYN_METRICS_TTFT_MIN"},
		{map[string]string{"DYN_METRICS_ITL_MAX": "2s"}, "DYN_METRICS_ITL_MAX"},
		{map[string]string{"DYN_METRICS_REQUEST_DURATION_COUNT": "1.5"}, "DYN_METRICS_REQUEST_DURATION_COUNT"},
		{map[string]string{"DYN_METRICS_OUTPUT_SEQUENCE_MIN": "0"}, "DYN_METRICS_OUTPUT_SEQUENCE_MIN"},
		{map[string]string{"DYN_METRICS_OUTPUT_SEQUENCE_MIN": "-1"}, "DYN_METRICS_OUTPUT_SEQUENCE_MIN"},
		{map[string]string{"DYN_METRICS_INPUT_SEQUENCE_MAX": "NaN"}, "DYN_METRICS_INPUT_SEQUENCE_MAX"},
		{map[string]string{"DYN_METRICS_INPUT_SEQUENCE_MAX": "40"}, "DYN_METRICS_INPUT_SEQUENCE_MAX"}, // below default min 50
		{map[string]string{"DYN_METRICS_TTFT_COUNT": "0"}, "DYN_METRICS_TTFT_COUNT"},
		{map[string]string{"DYN_METRICS_TTFT_COUNT": "513"}, "DYN_METRICS_TTFT_COUNT"},
	}
	for _, tt := range tests {
		t.Run(tt.wantVar, func(t *testing.T) {
			// A value that does not parse fails in BucketsFromEnv, one out
			// of range in NewMetrics; both name the variable.
			buckets, err := BucketsFromEnv(envMap(tt.env))
			if err == nil {
				_, err = NewMetrics(prometheus.NewRegistry(), MetricsConfig{Buckets: buckets})
			}
			if err == nil {
				t.Fatalf("no error; want one naming %s", tt.wantVar)
			}
			if !strings.Contains(err.Error(), tt.wantVar) {
				t.Errorf("error %q does not name %s", err, tt.wantVar)
			}
		})
	}
}

func TestNewMetricsErrors(t *testing.T) {
	if _, err := NewMetrics(nil, MetricsConfig{}); err == nil {
		t.Error("NewMetrics(nil registerer) succeeded; want an error")
	}
	reg := prometheus.NewRegistry()
	if _, err := NewMetrics(reg, MetricsConfig{}); err != nil {
		t.Fatalf("first NewMetrics: %v", err)
	}
	if _, err := NewMetrics(reg, MetricsConfig{}); err == nil {
		t.Error("second NewMetrics on the same registry succeeded; want a registration error")
	}
	if _, err := NewMetrics(reg, MetricsConfig{Prefix: "other"}); err != nil {
		t.Errorf("NewMetrics with another prefix on the same registry: %v", err)
	}
}

// TestGuardStreamSuccess follows one streamed request on a fake clock and
// checks every value it records.
func TestGuardStreamSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, reg := newTestMetrics(t, MetricsConfig{})
		foo := labels("model", "foo")

		g := m.Start("foo", EndpointChat, true)
		got := gather(t, reg)
		for _, name := range []string{"inflight_requests", "active_requests", "queued_requests"} {
			if v := got["dynamo_frontend_"+name][foo].value; v != 1 {
				t.Errorf("after Start: %s = %v, want 1", name, v)
			}
		}
		if v := got["dynamo_frontend_requests_started_total"][labels("model", "foo", "endpoint", EndpointChat, "request_type", "stream")].value; v != 1 {
			t.Errorf("requests_started_total = %v, want 1", v)
		}

		time.Sleep(100 * time.Millisecond)
		g.FirstToken(12)
		if v := gather(t, reg)["dynamo_frontend_queued_requests"][foo].value; v != 0 {
			t.Errorf("after FirstToken: queued_requests = %v, want 0", v)
		}
		g.FirstToken(99) // once only
		g.Chunk(1)       // t=0.1: first chunk, no ITL
		time.Sleep(200 * time.Millisecond)
		g.Chunk(4) // t=0.3: 4 ITL samples of 0.05
		time.Sleep(50 * time.Millisecond)
		g.Chunk(0) // no tokens: ignored, previous-chunk time unchanged
		time.Sleep(50 * time.Millisecond)
		g.Chunk(2) // t=0.4: 2 ITL samples of 0.05
		g.Cached(5)
		g.Cached(7) // once only
		g.OK()
		g.Finish()
		g.Finish() // idempotent

		got = gather(t, reg)
		wantRequests := map[string]float64{
			labels("model", "foo", "endpoint", EndpointChat, "request_type", "stream", "status", "success", "error_type", ""): 1,
		}
		if diff := cmp.Diff(wantRequests, values(got["dynamo_frontend_requests_total"])); diff != "" {
			t.Errorf("requests_total mismatch (-want +got):\n%s", diff)
		}
		for _, name := range []string{"inflight_requests", "active_requests", "queued_requests"} {
			if v := got["dynamo_frontend_"+name][foo].value; v != 0 {
				t.Errorf("after Finish: %s = %v, want 0", name, v)
			}
		}
		if v := got["dynamo_frontend_output_tokens_total"][foo].value; v != 7 {
			t.Errorf("output_tokens_total = %v, want 7", v)
		}
		for _, h := range []struct {
			name  string
			count uint64
			sum   float64
		}{
			{"request_duration_seconds", 1, 0.4},
			{"time_to_first_token_seconds", 1, 0.1},
			{"input_sequence_tokens", 1, 12},
			{"inter_token_latency_seconds", 6, 6 * 0.05},
			{"output_sequence_tokens", 1, 7},
			{"cached_tokens", 1, 5},
		} {
			s := got["dynamo_frontend_"+h.name][foo]
			if s.count != h.count || !approx(s.sum, h.sum) {
				t.Errorf("%s: count %d sum %v, want count %d sum %v", h.name, s.count, s.sum, h.count, h.sum)
			}
		}
		// Like http-service.rs: the one duration sample lands in a known
		// bucket (0.4s: above le=0, within le=2).
		d := got["dynamo_frontend_request_duration_seconds"][foo]
		if d.bounds[0] != 0 || d.cumulative[0] != 0 || d.bounds[1] != 2 || d.cumulative[1] != 1 {
			t.Errorf("request_duration buckets %v cumulative %v; want le=0 -> 0, le=2 -> 1", d.bounds, d.cumulative)
		}
		if _, ok := got["dynamo_frontend_disconnected_clients"]; ok && got["dynamo_frontend_disconnected_clients"][""].value != 0 {
			t.Errorf("disconnected_clients = %v, want 0", got["dynamo_frontend_disconnected_clients"][""].value)
		}
		if n := len(got["dynamo_frontend_model_cancellation_total"]); n != 0 {
			t.Errorf("model_cancellation_total has %d series, want 0", n)
		}
	})
}

// TestGuardLabelSets runs requests down every path and checks the exact
// counter values per label set, like Dynamo's http-service.rs.
func TestGuardLabelSets(t *testing.T) {
	m, reg := newTestMetrics(t, MetricsConfig{})
	type req struct {
		model, endpoint string
		stream          bool
		do              func(*Guard)
	}
	reqs := []req{
		{"foo", EndpointChat, true, func(g *Guard) { g.FirstToken(3); g.Chunk(2); g.OK() }},
		{"foo", EndpointChat, false, func(g *Guard) { g.FirstToken(3); g.Chunk(2); g.OK() }},
		{"bar", EndpointChat, true, func(g *Guard) { g.Fail(ErrInternal) }},
		{"bar", EndpointChat, false, func(g *Guard) { g.Fail(ErrInternal) }},
		{"foo", EndpointCompletions, false, func(g *Guard) { g.Fail(ErrValidation) }},
		{UnknownModel, EndpointChat, false, func(g *Guard) { g.Fail(ErrNotFound) }},
		{"", EndpointChat, false, func(g *Guard) { g.Fail(ErrNotFound) }}, // "" counts as unknown_model
		{"foo", EndpointChat, true, func(g *Guard) { g.FirstToken(3); g.Chunk(1); g.Cancelled(); g.Cancelled() }},
		{"foo", EndpointCompletions, true, func(g *Guard) { g.OK(); g.Fail("") }}, // last wins; "" is internal
		{"foo", EndpointCompletions, true, func(g *Guard) { g.Fail(ErrOverload); g.OK() }},
		{"baz", EndpointChat, false, func(g *Guard) {}}, // default: error/internal
	}
	for _, r := range reqs {
		g := m.Start(r.model, r.endpoint, r.stream)
		r.do(g)
		g.Finish()
		g.Finish()
		g.Cancelled() // after Finish: ignored
		g.OK()
	}
	m.Rejected("foo", EndpointChat)

	reqKey := func(model, endpoint, typ, status, errType string) string {
		return labels("model", model, "endpoint", endpoint, "request_type", typ, "status", status, "error_type", errType)
	}
	short := func(model, endpoint, typ string) string {
		return labels("model", model, "endpoint", endpoint, "request_type", typ)
	}
	got := gather(t, reg)
	for _, tt := range []struct {
		name string
		want map[string]float64
	}{
		{"dynamo_frontend_requests_total", map[string]float64{
			reqKey("foo", EndpointChat, "stream", "success", ""):                1,
			reqKey("foo", EndpointChat, "unary", "success", ""):                 1,
			reqKey("bar", EndpointChat, "stream", "error", ErrInternal):         1,
			reqKey("bar", EndpointChat, "unary", "error", ErrInternal):          1,
			reqKey("foo", EndpointCompletions, "unary", "error", ErrValidation): 1,
			reqKey(UnknownModel, EndpointChat, "unary", "error", ErrNotFound):   2,
			reqKey("foo", EndpointChat, "stream", "error", ErrCancelled):        1,
			reqKey("foo", EndpointCompletions, "stream", "error", ErrInternal):  1,
			reqKey("foo", EndpointCompletions, "stream", "success", ""):         1,
			reqKey("baz", EndpointChat, "unary", "error", ErrInternal):          1,
		}},
		{"dynamo_frontend_requests_started_total", map[string]float64{
			short("foo", EndpointChat, "stream"):        2,
			short("foo", EndpointChat, "unary"):         1,
			short("bar", EndpointChat, "stream"):        1,
			short("bar", EndpointChat, "unary"):         1,
			short("foo", EndpointCompletions, "unary"):  1,
			short("foo", EndpointCompletions, "stream"): 2,
			short(UnknownModel, EndpointChat, "unary"):  2,
			short("baz", EndpointChat, "unary"):         1,
		}},
		{"dynamo_frontend_model_cancellation_total", map[string]float64{
			short("foo", EndpointChat, "stream"): 1,
		}},
		{"dynamo_frontend_model_rejection_total", map[string]float64{
			labels("model", "foo", "endpoint", EndpointChat): 1,
		}},
		{"dynamo_frontend_disconnected_clients", map[string]float64{"": 1}},
		// Start resolves every per-model series, so models without tokens
		// show 0 rather than nothing.
		{"dynamo_frontend_output_tokens_total", map[string]float64{
			labels("model", "foo"): 5, labels("model", "bar"): 0,
			labels("model", "baz"): 0, labels("model", UnknownModel): 0,
		}},
	} {
		if diff := cmp.Diff(tt.want, values(got[tt.name])); diff != "" {
			t.Errorf("%s mismatch (-want +got):\n%s", tt.name, diff)
		}
	}
	for _, name := range []string{"inflight_requests", "active_requests", "queued_requests"} {
		for k, s := range got["dynamo_frontend_"+name] {
			if s.value != 0 {
				t.Errorf("%s{%s} = %v, want 0", name, k, s.value)
			}
		}
	}
	if s := got["dynamo_frontend_request_duration_seconds"][labels("model", UnknownModel)]; s.count != 2 {
		t.Errorf("request_duration_seconds{unknown_model} count = %d, want 2", s.count)
	}
}

func TestGuardUnaryErrorWithoutFirstToken(t *testing.T) {
	m, reg := newTestMetrics(t, MetricsConfig{})
	g := m.Start("foo", EndpointChat, false)
	if v := gather(t, reg)["dynamo_frontend_queued_requests"][labels("model", "foo")].value; v != 1 {
		t.Fatalf("queued_requests = %v, want 1", v)
	}
	g.Fail(ErrValidation)
	g.Finish()
	g.Chunk(5)      // after Finish: ignored
	g.FirstToken(5) // after Finish: ignored

	got := gather(t, reg)
	foo := labels("model", "foo")
	for _, name := range []string{"inflight_requests", "active_requests", "queued_requests"} {
		if v := got["dynamo_frontend_"+name][foo].value; v != 0 {
			t.Errorf("%s = %v, want 0", name, v)
		}
	}
	for _, name := range []string{"time_to_first_token_seconds", "input_sequence_tokens", "output_sequence_tokens", "inter_token_latency_seconds", "cached_tokens"} {
		if c := got["dynamo_frontend_"+name][foo].count; c != 0 {
			t.Errorf("%s count = %d, want 0", name, c)
		}
	}
	if v := got["dynamo_frontend_output_tokens_total"][foo].value; v != 0 {
		t.Errorf("output_tokens_total = %v, want 0", v)
	}
	key := labels("model", "foo", "endpoint", EndpointChat, "request_type", "unary", "status", "error", "error_type", ErrValidation)
	if diff := cmp.Diff(map[string]float64{key: 1}, values(got["dynamo_frontend_requests_total"])); diff != "" {
		t.Errorf("requests_total mismatch (-want +got):\n%s", diff)
	}
	if c := got["dynamo_frontend_request_duration_seconds"][foo].count; c != 1 {
		t.Errorf("request_duration_seconds count = %d, want 1", c)
	}
}

func TestMetricsNames(t *testing.T) {
	m, reg := newTestMetrics(t, MetricsConfig{})
	g := m.Start("foo", EndpointChat, true)
	g.FirstToken(1)
	g.Chunk(1)
	g.Chunk(1)
	g.Cached(1)
	g.Cancelled()
	g.Finish()
	m.Rejected("foo", EndpointChat)
	m.SetModel("foo", pipeline.ModelConfig{})
	m.ObserveTokenizer("detokenize", time.Microsecond)

	var names []string
	for name := range gather(t, reg) {
		names = append(names, name)
	}
	slices.Sort(names)
	want := []string{
		"requests_total", "requests_started_total", "inflight_requests", "active_requests",
		"queued_requests", "disconnected_clients", "request_duration_seconds", "input_sequence_tokens",
		"output_sequence_tokens", "cached_tokens", "output_tokens_total", "time_to_first_token_seconds",
		"inter_token_latency_seconds", "tokenizer_latency_ms", "model_cancellation_total",
		"model_rejection_total", "model_ready", "model_total_kv_blocks", "model_max_num_seqs",
		"model_max_num_batched_tokens", "model_context_length", "model_kv_cache_block_size",
		"model_migration_limit",
	}
	for i := range want {
		want[i] = "dynamo_frontend_" + want[i]
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("metric names mismatch (-want +got):\n%s", diff)
	}
}

func TestMetricsPrefix(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", "dynamo_frontend"},
		{"dynamo_frontend", "dynamo_frontend"},
		{"my-prefix", "my_prefix"},
		{"a.b c", "a_b_c"},
		{"9lives", "_9lives"},
		{":x", "_:x"},
		{"ns:sub", "ns:sub"},
		{"_ok", "_ok"},
		{"---", "dynamo_frontend"},
		{"é", "dynamo_frontend"},
	} {
		if got := MetricsPrefix(tt.in); got != tt.want {
			t.Errorf("MetricsPrefix(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}

	m, reg := newTestMetrics(t, MetricsConfig{Prefix: "my-prefix"})
	g := m.Start("foo", EndpointChat, false)
	g.OK()
	g.Finish()
	m.SetModel("foo", pipeline.ModelConfig{ContextLength: 8})
	got := gather(t, reg)
	for name := range got {
		if !strings.HasPrefix(name, "my_prefix_") {
			t.Errorf("metric %q does not start with my_prefix_", name)
		}
	}
	if n := len(got["my_prefix_requests_total"]); n != 1 {
		t.Errorf("my_prefix_requests_total has %d series, want 1", n)
	}
	if v := got["my_prefix_model_context_length"][labels("model", "foo")].value; v != 8 {
		t.Errorf("my_prefix_model_context_length = %v, want 8", v)
	}
}

func TestMetricsRemoveModel(t *testing.T) {
	m, reg := newTestMetrics(t, MetricsConfig{})
	foo := pipeline.ModelConfig{ContextLength: 4096, KVCacheBlockSize: 16, TotalKVBlocks: 1000, MaxNumSeqs: 256, MaxNumBatchedTokens: 8192, MigrationLimit: 3}
	m.SetModel("foo", foo)
	m.SetModel("bar", pipeline.ModelConfig{ContextLength: 1})
	g := m.Start("foo", EndpointChat, false)
	g.OK()
	g.Finish()

	gauges := map[string]float64{
		"model_context_length":         4096,
		"model_kv_cache_block_size":    16,
		"model_total_kv_blocks":        1000,
		"model_max_num_seqs":           256,
		"model_max_num_batched_tokens": 8192,
		"model_migration_limit":        3,
		"model_ready":                  1,
	}
	check := func(wantFoo bool) {
		t.Helper()
		got := gather(t, reg)
		for name, want := range gauges {
			series := got["dynamo_frontend_"+name]
			s, ok := series[labels("model", "foo")]
			switch {
			case wantFoo && !ok:
				t.Errorf("%s{model=foo} missing", name)
			case wantFoo && s.value != want:
				t.Errorf("%s{model=foo} = %v, want %v", name, s.value, want)
			case !wantFoo && ok:
				t.Errorf("%s{model=foo} still present after RemoveModel", name)
			}
			if _, ok := series[labels("model", "bar")]; !ok {
				t.Errorf("%s{model=bar} missing", name)
			}
		}
		if n := len(got["dynamo_frontend_requests_total"]); n != 1 {
			t.Errorf("requests_total has %d series, want 1 (history kept)", n)
		}
		if _, ok := got["dynamo_frontend_request_duration_seconds"][labels("model", "foo")]; !ok {
			t.Error("request_duration_seconds{model=foo} removed; want history kept")
		}
	}
	check(true)
	m.RemoveModel("foo")
	check(false)
	m.RemoveModel("foo") // removing twice is harmless
	m.SetModel("foo", foo)
	check(true)
}

func TestObserveTokenizer(t *testing.T) {
	m, reg := newTestMetrics(t, MetricsConfig{})
	m.ObserveTokenizer("tokenize", 3*time.Millisecond)
	m.ObserveTokenizer("tokenize", 500*time.Microsecond)
	m.ObserveTokenizer("detokenize", 20*time.Millisecond)
	got := gather(t, reg)["dynamo_frontend_tokenizer_latency_ms"]
	tok := got[labels("operation", "tokenize")]
	if tok.count != 2 || !approx(tok.sum, 3.5) {
		t.Errorf("tokenize: count %d sum %v, want 2 and 3.5", tok.count, tok.sum)
	}
	if tok.cumulative[0] != 1 { // 0.5ms lands in le=0.5
		t.Errorf("tokenize le=0.5 cumulative = %d, want 1", tok.cumulative[0])
	}
	if de := got[labels("operation", "detokenize")]; de.count != 1 || !approx(de.sum, 20) {
		t.Errorf("detokenize: count %d sum %v, want 1 and 20", de.count, de.sum)
	}
}

func TestNilMetrics(t *testing.T) {
	var m *Metrics
	g := m.Start("foo", EndpointChat, true)
	if g != nil {
		t.Fatalf("nil Metrics: Start = %v, want nil", g)
	}
	g.FirstToken(1)
	g.Chunk(1)
	g.Cached(1)
	g.Fail(ErrInternal)
	g.Cancelled()
	g.OK()
	g.Finish()
	m.Rejected("foo", EndpointChat)
	m.SetModel("foo", pipeline.ModelConfig{})
	m.RemoveModel("foo")
	m.ObserveTokenizer("tokenize", time.Millisecond)
}

// TestMetricsConcurrent runs 50 guards at once, alongside model updates and
// scrapes; run it with -race.
func TestMetricsConcurrent(t *testing.T) {
	const (
		n         = 50
		chunks    = 5
		perChunk  = 2
		cancelMod = 5 // every 5th request is cancelled
	)
	m, reg := newTestMetrics(t, MetricsConfig{})
	models := []string{"a", "b", "c"}

	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			g := m.Start(models[i%len(models)], EndpointChat, i%2 == 0)
			defer g.Finish()
			g.FirstToken(10)
			for range chunks {
				g.Chunk(perChunk)
			}
			g.Cached(1)
			if i%cancelMod == 0 {
				// Cancelled from another goroutine, as a context watcher would.
				done := make(chan struct{})
				go func() { g.Cancelled(); close(done) }()
				<-done
				return
			}
			g.OK()
		})
	}
	for i := range 10 {
		wg.Go(func() {
			model := models[i%len(models)]
			m.SetModel(model, pipeline.ModelConfig{ContextLength: i})
			m.ObserveTokenizer("tokenize", time.Millisecond)
			if _, err := reg.Gather(); err != nil {
				t.Errorf("Gather: %v", err)
			}
			m.RemoveModel(model)
		})
	}
	wg.Wait()

	got := gather(t, reg)
	total := func(name, substr string) float64 {
		var v float64
		for k, s := range got["dynamo_frontend_"+name] {
			if strings.Contains(k, substr) {
				v += s.value
			}
		}
		return v
	}
	count := func(name string) float64 {
		var c uint64
		for _, s := range got["dynamo_frontend_"+name] {
			c += s.count
		}
		return float64(c)
	}
	const cancelled = (n + cancelMod - 1) / cancelMod
	checks := []struct {
		what      string
		got, want float64
	}{
		{"requests_total", total("requests_total", ""), n},
		{"requests_total success", total("requests_total", "status=success"), n - cancelled},
		{"requests_total cancelled", total("requests_total", "error_type="+ErrCancelled), cancelled},
		{"requests_started_total", total("requests_started_total", ""), n},
		{"model_cancellation_total", total("model_cancellation_total", ""), cancelled},
		{"disconnected_clients", total("disconnected_clients", ""), cancelled},
		{"output_tokens_total", total("output_tokens_total", ""), n * chunks * perChunk},
		{"inflight_requests", total("inflight_requests", ""), 0},
		{"active_requests", total("active_requests", ""), 0},
		{"queued_requests", total("queued_requests", ""), 0},
		{"inter_token_latency_seconds count", count("inter_token_latency_seconds"), n * (chunks - 1) * perChunk},
		{"time_to_first_token_seconds count", count("time_to_first_token_seconds"), n},
		{"output_sequence_tokens count", count("output_sequence_tokens"), n},
		{"request_duration_seconds count", count("request_duration_seconds"), n},
		{"tokenizer_latency_ms count", count("tokenizer_latency_ms"), 10},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	if n := len(got["dynamo_frontend_model_ready"]); n != 0 {
		t.Errorf("model_ready has %d series after every model was removed, want 0", n)
	}
}

// BenchmarkGuardChunk measures the per-chunk hot path of a streamed request
// (output_tokens_total plus one ITL sample). It should report 0 allocs/op:
//
//	go test -run '^$' -bench GuardChunk -benchmem ./pkg/frontend/
func BenchmarkGuardChunk(b *testing.B) {
	m, _ := newTestMetrics(b, MetricsConfig{})
	g := m.Start("foo", EndpointChat, true)
	defer g.Finish()
	g.FirstToken(100)
	b.ReportAllocs()
	for b.Loop() {
		g.Chunk(1)
	}
}

// BenchmarkGuardRequest measures one request's whole accounting: Start,
// FirstToken, 16 one-token chunks, OK and Finish.
//
//	go test -run '^$' -bench GuardRequest -benchmem ./pkg/frontend/
func BenchmarkGuardRequest(b *testing.B) {
	m, _ := newTestMetrics(b, MetricsConfig{})
	b.ReportAllocs()
	for b.Loop() {
		g := m.Start("foo", EndpointChat, true)
		g.FirstToken(100)
		for range 16 {
			g.Chunk(1)
		}
		g.OK()
		g.Finish()
	}
}
