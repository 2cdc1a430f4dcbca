package kv

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestIndexerMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := newIndexerMetrics(reg, "test")
	if err != nil {
		t.Fatal(err)
	}
	x := newIndexer(indexerOptions{Metrics: m})
	ctx := context.Background()
	storeChain(t, x, wA, 1, 2, 3)
	storeChain(t, x, wB, 1)
	_ = x.Apply(ctx, storedEv(wA, ptr(uint64(999)), chainBlocks(999, true, 4)...)) // parent missing
	_ = x.Apply(ctx, storedEv(wA, ptr(seqOf(1, 2)), blockAt(seqOf(1, 2), 9)))      // self reference
	_ = x.Apply(ctx, removedEv(wA, seqOf(1, 2, 3)))                                // ok
	_ = x.Apply(ctx, removedEv(wA, 12345, seqOf(1, 2)))                            // one missing
	_ = x.Apply(ctx, clearedEv(wB))                                                // ok
	x.ClearWorker(wA)                                                              // not an event
	_ = x.Apply(ctx, storedEv(wC, nil, chainBlocks(0, false, 5, 6)...))            // ok
	_ = x.Apply(context.Background(), storedEv(wC, nil))                           // empty but ok

	want := map[[2]string]float64{
		{"stored", "ok"}:                     4,
		{"stored", "parent_block_not_found"}: 1,
		{"stored", "invalid_block"}:          1,
		{"removed", "ok"}:                    1,
		{"removed", "block_not_found"}:       1,
		{"cleared", "ok"}:                    1,
	}
	got := map[[2]string]float64{}
	var size float64
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "test_kv_cache_events_applied":
			for _, mt := range mf.GetMetric() {
				if v := mt.GetCounter().GetValue(); v != 0 {
					got[[2]string{label(mt, "event_type"), label(mt, "status")}] = v
				}
			}
		case "test_kv_indexer_blocks":
			size = mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events applied (-want +got):\n%s", diff)
	}
	if size != float64(x.Size()) || size != 2 {
		t.Errorf("size gauge = %v, want %d (Size) = 2", size, x.Size())
	}

	// A second indexer sharing the metrics adds to the same gauge.
	y := newIndexer(indexerOptions{Metrics: m})
	storeChain(t, y, wA, 1, 2, 3)
	y.RemoveWorker(wA.ID)
	storeChain(t, y, wA, 1)
	if got := gaugeValue(t, reg, "test_kv_indexer_blocks"); got != float64(x.Size()+y.Size()) || got != 3 {
		t.Errorf("shared size gauge = %v, want %d + %d = 3", got, x.Size(), y.Size())
	}

	if _, err := newIndexerMetrics(reg, "test"); err == nil {
		t.Error("registering the same names twice succeeded")
	}
	if _, err := newIndexerMetrics(nil, ""); err == nil {
		t.Error("nil registerer accepted")
	}
	var nilMetrics *indexerMetrics
	nilMetrics.applied("stored", nil)
	nilMetrics.addSize(1)
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func gaugeValue(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
