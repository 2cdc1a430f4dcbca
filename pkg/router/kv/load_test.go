package kv

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/google/go-cmp/cmp"
)

func loadEvent(worker uint64, rank *uint32, active, total uint64) kvblock.LoadEvent {
	return kvblock.LoadEvent{WorkerID: worker, Data: kvblock.ForwardPassMetrics{
		WorkerStats: kvblock.WorkerStats{DataParallelRank: rank},
		KVStats:     kvblock.KVStats{KVActiveBlocks: active, KVTotalBlocks: total},
	}}
}

func newTestMonitor(t *testing.T, thr BusyThresholds) *LoadMonitor {
	t.Helper()
	m, err := NewLoadMonitor(thr)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestLoadMonitorThresholds(t *testing.T) {
	tests := []struct {
		name     string
		thr      BusyThresholds
		capacity *WorkerCapacity
		feed     func(m *LoadMonitor)
		busy     bool
	}{
		{name: "no thresholds: never busy", thr: BusyThresholds{},
			feed: func(m *LoadMonitor) {
				m.ObserveLoadEvent(loadEvent(1, nil, 100, 100))
				m.ObserveActiveLoad(activeLoad{WorkerID: 1, ActivePrefillTokens: new(uint64(1 << 40))})
			}},
		{name: "decode blocks over the fraction", thr: BusyThresholds{ActiveDecodeBlocks: new(0.5)},
			feed: func(m *LoadMonitor) { m.ObserveLoadEvent(loadEvent(1, nil, 51, 100)) }, busy: true},
		{name: "decode blocks at the fraction", thr: BusyThresholds{ActiveDecodeBlocks: new(0.5)},
			feed: func(m *LoadMonitor) { m.ObserveLoadEvent(loadEvent(1, nil, 50, 100)) }},
		{name: "router-tracked decode blocks over capacity's total", thr: BusyThresholds{ActiveDecodeBlocks: new(0.8)},
			capacity: &WorkerCapacity{TotalKVBlocks: 100},
			feed: func(m *LoadMonitor) {
				m.ObserveActiveLoad(activeLoad{WorkerID: 1, ActiveDecodeBlocks: new(uint64(81))})
			}, busy: true},
		{name: "worker-reported used blocks", thr: BusyThresholds{ActiveDecodeBlocks: new(0.8)},
			capacity: &WorkerCapacity{TotalKVBlocks: 10},
			feed: func(m *LoadMonitor) {
				m.ObserveActiveLoad(activeLoad{WorkerID: 1, KVUsedBlocks: new(uint64(9))})
			}, busy: true},
		{name: "either decode signal suffices", thr: BusyThresholds{ActiveDecodeBlocks: new(0.5)},
			feed: func(m *LoadMonitor) {
				m.ObserveLoadEvent(loadEvent(1, nil, 10, 100))
				m.ObserveActiveLoad(activeLoad{WorkerID: 1, ActiveDecodeBlocks: new(uint64(60))})
			}, busy: true},
		{name: "total unknown: cache usage fraction", thr: BusyThresholds{ActiveDecodeBlocks: new(0.5)},
			feed: func(m *LoadMonitor) {
				ev := loadEvent(1, nil, 0, 0)
				ev.Data.KVStats.GPUCacheUsagePerc = 0.75
				m.ObserveLoadEvent(ev)
			}, busy: true},
		{name: "prefill tokens over the absolute threshold", thr: BusyThresholds{ActivePrefillTokens: new(uint64(1000))},
			feed: func(m *LoadMonitor) {
				m.ObserveActiveLoad(activeLoad{WorkerID: 1, ActivePrefillTokens: new(uint64(1001))})
			}, busy: true},
		{name: "prefill tokens at the absolute threshold", thr: BusyThresholds{ActivePrefillTokens: new(uint64(1000))},
			feed: func(m *LoadMonitor) {
				m.ObserveActiveLoad(activeLoad{WorkerID: 1, ActivePrefillTokens: new(uint64(1000))})
			}},
		{name: "prefill over a fraction of max_num_batched_tokens", thr: BusyThresholds{ActivePrefillTokensFrac: new(0.5)},
			capacity: &WorkerCapacity{MaxNumBatchedTokens: 2048},
			feed: func(m *LoadMonitor) {
				m.ObserveActiveLoad(activeLoad{WorkerID: 1, ActivePrefillTokens: new(uint64(1025))})
			}, busy: true},
		{name: "unknown max_num_batched_tokens is 10M", thr: BusyThresholds{ActivePrefillTokensFrac: new(0.5)},
			feed: func(m *LoadMonitor) {
				m.ObserveActiveLoad(activeLoad{WorkerID: 1, ActivePrefillTokens: new(uint64(5_000_000))})
			}},
		{name: "unknown max_num_batched_tokens is 10M, over", thr: BusyThresholds{ActivePrefillTokensFrac: new(0.5)},
			feed: func(m *LoadMonitor) {
				m.ObserveActiveLoad(activeLoad{WorkerID: 1, ActivePrefillTokens: new(uint64(5_000_001))})
			}, busy: true},
		{name: "no data", thr: BusyThresholds{ActiveDecodeBlocks: new(0.0)}, feed: func(*LoadMonitor) {}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestMonitor(t, tc.thr)
			if tc.capacity != nil {
				m.SetCapacity(1, *tc.capacity)
			}
			tc.feed(m)
			if got := m.Busy(1); got != tc.busy {
				t.Errorf("Busy = %v, want %v", got, tc.busy)
			}
		})
	}
}

// TestLoadMonitorAllRanks: a worker is busy only if every dp rank is.
func TestLoadMonitorAllRanks(t *testing.T) {
	r0, r1 := new(uint32(0)), new(uint32(1))
	m := newTestMonitor(t, BusyThresholds{ActiveDecodeBlocks: new(0.5)})

	m.ObserveLoadEvent(loadEvent(1, r0, 90, 100))
	if !m.Busy(1) {
		t.Fatal("single reported rank over threshold: not busy")
	}
	m.SetCapacity(1, WorkerCapacity{DataParallelSize: 2})
	if m.Busy(1) {
		t.Fatal("rank 1 has no data yet, but the worker is busy")
	}
	m.ObserveLoadEvent(loadEvent(1, r1, 10, 100))
	if m.Busy(1) {
		t.Fatal("rank 1 is idle, but the worker is busy")
	}
	m.ObserveLoadEvent(loadEvent(1, r1, 60, 100))
	if !m.Busy(1) {
		t.Fatal("both ranks over threshold: not busy")
	}
	if got := m.BusyWorkers(); !cmp.Equal(got, []uint64{1}) {
		t.Errorf("BusyWorkers = %v", got)
	}
	// A start rank shifts the ranks checked (E2): ranks 1 and 2 now.
	m.SetCapacity(1, WorkerCapacity{DataParallelSize: 2, DataParallelStartRank: 1})
	if m.Busy(1) {
		t.Error("rank 2 has no data, but the worker is busy")
	}
	m.RemoveWorker(1)
	if m.Busy(1) || len(m.BusyWorkers()) != 0 {
		t.Error("removed worker still busy")
	}
}

func TestLoadMonitorUpdateThresholds(t *testing.T) {
	m := newTestMonitor(t, BusyThresholds{ActiveDecodeBlocks: new(0.9)})
	got, err := m.UpdateThresholds(BusyThresholds{ActivePrefillTokens: new(uint64(500))})
	if err != nil {
		t.Fatal(err)
	}
	want := BusyThresholds{ActiveDecodeBlocks: new(0.9), ActivePrefillTokens: new(uint64(500))}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after update (-want +got):\n%s", diff)
	}
	*got.ActiveDecodeBlocks = 0 // a returned copy does not alias the monitor's
	if _, err := m.UpdateThresholds(BusyThresholds{ActiveDecodeBlocks: new(1.5)}); err == nil {
		t.Error("threshold 1.5 accepted")
	}
	if diff := cmp.Diff(want, m.Thresholds()); diff != "" {
		t.Errorf("after a rejected update (-want +got):\n%s", diff)
	}
	b, _ := json.Marshal(m.Thresholds())
	if string(b) != `{"active_decode_blocks_threshold":0.9,"active_prefill_tokens_threshold":500}` {
		t.Errorf("JSON %s", b)
	}
	for _, bad := range []BusyThresholds{
		{ActiveDecodeBlocks: new(-0.1)},
		{ActivePrefillTokensFrac: new(-1.0)},
	} {
		if _, err := NewLoadMonitor(bad); err == nil {
			t.Errorf("NewLoadMonitor(%+v) accepted", bad)
		}
	}
}

// TestSchedulerWithLoadMonitor: busy workers are skipped; when all are,
// the request is rejected as overloaded.
func TestSchedulerWithLoadMonitor(t *testing.T) {
	m := newTestMonitor(t, BusyThresholds{ActivePrefillTokens: new(uint64(100))})
	s := newTestScheduler(t, defaultSchedulerConfig(16), m)
	w1, w2 := Worker{ID: 1}, Worker{ID: 2}
	// Worker 1 has the better cost but is busy.
	req := scheduleRequest{
		Candidates: []Worker{w1, w2}, ISL: 64,
		Overlaps: overlapScores{Scores: map[Worker]uint32{w1: 4}},
		Loads:    map[Worker]workerLoad{w1: {}, w2: {}},
	}
	m.ObserveActiveLoad(activeLoad{WorkerID: 1, ActivePrefillTokens: new(uint64(101))})
	sel, err := s.Select(req)
	if err != nil || sel.Worker != w2 {
		t.Fatalf("Select = %+v, %v; want w2", sel.Worker, err)
	}
	m.ObserveActiveLoad(activeLoad{WorkerID: 2, ActivePrefillTokens: new(uint64(500))})
	if _, err := s.Select(req); !errors.Is(err, errAllWorkersBusy) || !errors.Is(err, runtime.ErrWorkerOverloaded) {
		t.Fatalf("all busy: err = %v", err)
	}
	m.ObserveActiveLoad(activeLoad{WorkerID: 1, ActivePrefillTokens: new(uint64(0))})
	if sel, err := s.Select(req); err != nil || sel.Worker != w1 {
		t.Fatalf("after recovery: %+v, %v; want w1", sel.Worker, err)
	}
}

// TestSequencesFeedLoadMonitor wires sequences.OnLoad into a LoadMonitor,
// as the router does, so routed prompt tokens make a worker busy.
func TestSequencesFeedLoadMonitor(t *testing.T) {
	m := newTestMonitor(t, BusyThresholds{ActivePrefillTokens: new(uint64(50))})
	s := newTestSequences(t, defaultSequencesConfig(16), sequencesDeps{OnLoad: m.ObserveActiveLoad})
	mustAdd(t, s, activeRequest{ID: "a", Worker: Worker{ID: 4}, ISL: 64})
	if !m.Busy(4) {
		t.Fatal("64 queued tokens over 50: not busy")
	}
	s.MarkPrefillCompleted("a")
	if m.Busy(4) {
		t.Fatal("busy after prefill completed")
	}
}

func TestDPRanks(t *testing.T) {
	if got, want := dpRanks(3, WorkerCapacity{}), []Worker{{ID: 3}}; !cmp.Equal(got, want) {
		t.Errorf("default: %v", got)
	}
	got := dpRanks(3, WorkerCapacity{DataParallelSize: 2, DataParallelStartRank: 4})
	if want := []Worker{{ID: 3, DPRank: 4}, {ID: 3, DPRank: 5}}; !cmp.Equal(got, want) {
		t.Errorf("dp 2 from 4: %v", got)
	}
}

// A worker is full by its published load when every rank reports at
// least max_num_seqs requests, running and waiting, in a recent event;
// an older event, a rank without one, or an unknown max_num_seqs is not
// full.
func TestLoadMonitorFull(t *testing.T) {
	m := newTestMonitor(t, BusyThresholds{})
	m.SetCapacity(7, WorkerCapacity{DataParallelSize: 2})
	stats := func(rank uint32, active, waiting uint64) kvblock.LoadEvent {
		return kvblock.LoadEvent{WorkerID: 7, Data: kvblock.ForwardPassMetrics{WorkerStats: kvblock.WorkerStats{
			DataParallelRank: &rank, RequestActiveSlots: active, RequestTotalSlots: 1024, NumRequestsWaiting: waiting}}}
	}
	m.ObserveLoadEvent(stats(0, 4, 0))
	if m.Full(7, 4) {
		t.Error("full with rank 1 unheard of")
	}
	m.ObserveLoadEvent(stats(1, 3, 1))
	if !m.Full(7, 4) || !m.Saturated(7, 4) {
		t.Error("both ranks at 4 requests of 4: not full")
	}
	if m.Full(7, 5) || m.Full(7, 0) || m.Saturated(7, 5) {
		t.Error("full below max_num_seqs, or with max_num_seqs unknown")
	}
	m.ObserveLoadEvent(stats(1, 3, 0))
	if m.Full(7, 4) {
		t.Error("full with rank 1 at 3 of 4")
	}
	m.ObserveLoadEvent(stats(1, 4, 2))
	m.mu.Lock()
	m.workers[7].ranks[0].at = m.workers[7].ranks[0].at.Add(-publishedLoadTTL - time.Second)
	m.mu.Unlock()
	if m.Full(7, 4) {
		t.Error("full by a rank's event older than PublishedLoadTTL")
	}
	var none *LoadMonitor
	if none.Full(7, 4) || none.Saturated(7, 4) {
		t.Error("a nil monitor reports a full worker")
	}
}
