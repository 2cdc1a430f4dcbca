package kv

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// gatherHistogram returns the sample count and sum of the (single)
// histogram named name.
func gatherHistogram(t *testing.T, reg *prometheus.Registry, name string) (count uint64, sum float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			h := mf.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0, 0
}

func TestRouterMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := newRouterMetrics(prometheus.WrapRegistererWith(prometheus.Labels{"router_id": "42"}, reg), "")
	if err != nil {
		t.Fatal(err)
	}
	m.ObserveOverhead(overhead{
		BlockHashing: 250 * time.Microsecond,
		FindMatches:  time.Millisecond,
		SeqHashing:   100 * time.Microsecond,
		Scheduling:   2 * time.Millisecond,
		Total:        4 * time.Millisecond,
	})
	m.ObserveSelection(selection{OverlapBlocks: 3, RequiredBlocks: 4})
	m.ObserveSelection(selection{OverlapBlocks: 0, RequiredBlocks: 0}) // no hit rate
	m.SetActiveLoad("decode", activeLoad{WorkerID: 7, DPRank: 1, ActiveDecodeBlocks: new(uint64(12)), ActivePrefillTokens: new(uint64(300))})
	m.SetActiveLoad("decode", activeLoad{WorkerID: 7, DPRank: 1, ActivePrefillTokens: new(uint64(0))})

	for name, sum := range map[string]float64{
		"dynamo_router_overhead_block_hashing_ms":        0.25,
		"dynamo_router_overhead_indexer_find_matches_ms": 1,
		"dynamo_router_overhead_seq_hashing_ms":          0.1,
		"dynamo_router_overhead_scheduling_ms":           2,
		"dynamo_router_overhead_total_ms":                4,
	} {
		if n, s := gatherHistogram(t, reg, name); n != 1 || s != sum {
			t.Errorf("%s: count %d sum %v, want 1 and %v", name, n, s, sum)
		}
	}
	if n, s := gatherHistogram(t, reg, "dynamo_component_router_kv_hit_rate"); n != 1 || s != 0.75 {
		t.Errorf("kv_hit_rate: count %d sum %v, want 1 and 0.75", n, s)
	}
	if n, s := gatherHistogram(t, reg, "dynamo_router_predicted_overlap_blocks"); n != 2 || s != 3 {
		t.Errorf("overlap blocks: count %d sum %v, want 2 and 3", n, s)
	}

	const gauges = `
# HELP dynamo_frontend_worker_active_decode_blocks Active KV blocks of a worker as tracked by the router.
# TYPE dynamo_frontend_worker_active_decode_blocks gauge
dynamo_frontend_worker_active_decode_blocks{dp_rank="1",router_id="42",worker_id="7",worker_type="decode"} 12
# HELP dynamo_frontend_worker_active_prefill_tokens Routed prompt tokens of a worker whose prefill has not completed.
# TYPE dynamo_frontend_worker_active_prefill_tokens gauge
dynamo_frontend_worker_active_prefill_tokens{dp_rank="1",router_id="42",worker_id="7",worker_type="decode"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(gauges),
		"dynamo_frontend_worker_active_decode_blocks", "dynamo_frontend_worker_active_prefill_tokens"); err != nil {
		t.Error(err)
	}
	m.DeleteWorker(7)
	if n := testutil.CollectAndCount(m.activeDecodeBlocks); n != 0 {
		t.Errorf("%d decode gauges left after DeleteWorker", n)
	}

	// Same names again: registration fails.
	if _, err := newRouterMetrics(reg, ""); err == nil {
		t.Error("duplicate registration accepted")
	}
	if _, err := newRouterMetrics(nil, ""); err == nil {
		t.Error("nil registerer accepted")
	}
	// Another prefix registers side by side.
	other, err := newRouterMetrics(reg, "test")
	if err != nil {
		t.Fatal(err)
	}
	other.ObserveOverhead(overhead{Total: time.Millisecond})
	if n, _ := gatherHistogram(t, reg, "test_router_overhead_total_ms"); n != 1 {
		t.Errorf("prefixed histogram count %d", n)
	}

	var none *routerMetrics // nil records nothing
	none.ObserveOverhead(overhead{})
	none.ObserveSelection(selection{})
	none.SetActiveLoad("decode", activeLoad{})
	none.DeleteWorker(1)
}
