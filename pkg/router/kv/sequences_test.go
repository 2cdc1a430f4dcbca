package kv

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func newTestSequences(t *testing.T, cfg sequencesConfig, deps sequencesDeps) *Sequences {
	t.Helper()
	s, err := newSequences(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func seqLoad(t *testing.T, s *Sequences, w Worker, hashes ...uint64) workerLoad {
	t.Helper()
	l, ok := s.Loads(hashes)[w]
	if !ok {
		t.Fatalf("no load for %+v", w)
	}
	return l
}

func mustAdd(t *testing.T, s *Sequences, r activeRequest) {
	t.Helper()
	if _, err := s.Add(r); err != nil {
		t.Fatal(err)
	}
}

func TestSequencesAccounting(t *testing.T) {
	w := Worker{ID: 7, DPRank: 1}
	var loads []activeLoad
	s := newTestSequences(t, defaultSequencesConfig(4), sequencesDeps{OnLoad: func(l activeLoad) { loads = append(loads, l) }})

	// r1: 16 tokens, 1 cached block → 12 prefill tokens; 4 blocks.
	mustAdd(t, s, activeRequest{ID: "r1", Worker: w, Hashes: []uint64{1, 2, 3, 4}, ISL: 16, Overlap: 1})
	// r2 shares blocks 1 and 2: 12 prefill tokens; blocks {1..5}.
	mustAdd(t, s, activeRequest{ID: "r2", Worker: w, Hashes: []uint64{1, 2, 5}, ISL: 12})

	steps := []struct {
		name string
		do   func()
		want workerLoad
	}{
		{"after adds", func() {}, workerLoad{ActivePrefillTokens: 24, ActiveBlocks: 5, NewBlocks: 1}},
		{"r1 prefill complete", func() { s.MarkPrefillCompleted("r1") }, workerLoad{ActivePrefillTokens: 12, ActiveBlocks: 5, NewBlocks: 1}},
		{"idempotent", func() { s.MarkPrefillCompleted("r1") }, workerLoad{ActivePrefillTokens: 12, ActiveBlocks: 5, NewBlocks: 1}},
		{"r1 freed: shared blocks stay", func() { s.Free("r1") }, workerLoad{ActivePrefillTokens: 12, ActiveBlocks: 3, NewBlocks: 1}},
		{"r2 cancelled before its first token", func() { s.Free("r2") }, workerLoad{}},
		{"double free", func() { s.Free("r2") }, workerLoad{}},
		{"unknown ids", func() { s.MarkPrefillCompleted("nope"); s.Free("nope") }, workerLoad{}},
	}
	for _, st := range steps {
		st.do()
		// The probe hashes: 1 (held while r1 or r2 is active) and 9 (never).
		want := st.want
		if want == (workerLoad{}) {
			want.NewBlocks = 2
		}
		if got := seqLoad(t, s, w, 1, 9); got != want {
			t.Errorf("%s: load %+v, want %+v", st.name, got, want)
		}
	}
	if n := s.Active(); n != 0 {
		t.Errorf("Active() = %d after freeing everything", n)
	}
	wantLast := activeLoad{WorkerID: 7, DPRank: 1, ActiveDecodeBlocks: new(uint64(0)), ActivePrefillTokens: new(uint64(0))}
	if len(loads) != 6 { // 2 adds, 2 marks (one idempotent), 2 frees
		t.Errorf("OnLoad called %d times, want 6", len(loads))
	} else if diff := cmp.Diff(wantLast, loads[len(loads)-1]); diff != "" {
		t.Errorf("last ActiveLoad (-want +got):\n%s", diff)
	}
}

func TestSequencesAddEdgeCases(t *testing.T) {
	w := Worker{ID: 1}
	s := newTestSequences(t, defaultSequencesConfig(4), sequencesDeps{})
	mustAdd(t, s, activeRequest{ID: "a", Worker: w, ISL: 8, Overlap: 5}) // overlap beyond the prompt
	if got := seqLoad(t, s, w).ActivePrefillTokens; got != 0 {
		t.Errorf("prefill with overlap > ISL = %d, want 0", got)
	}
	_, err := s.Add(activeRequest{ID: "a", Worker: Worker{ID: 2}, ISL: 8})
	if !errors.Is(err, errDuplicateRequest) {
		t.Errorf("duplicate Add: err = %v, want ErrDuplicateRequest", err)
	}
	hashes := []uint64{1, 2}
	mustAdd(t, s, activeRequest{ID: "b", Worker: w, Hashes: hashes, ISL: 8})
	hashes[0] = 99 // the tracker keeps its own copy
	if got := seqLoad(t, s, w, 1).NewBlocks; got != 0 {
		t.Errorf("tracker aliases the caller's hashes")
	}
	for _, cfg := range []sequencesConfig{{BlockSize: 0}, {BlockSize: 4, Expiry: -time.Second}} {
		if _, err := newSequences(cfg, sequencesDeps{}); err == nil {
			t.Errorf("NewSequences(%+v) accepted", cfg)
		}
	}
}

func TestSequencesTrackActiveBlocksOff(t *testing.T) {
	w := Worker{ID: 3}
	cfg := defaultSequencesConfig(4)
	cfg.TrackActiveBlocks = false
	s := newTestSequences(t, cfg, sequencesDeps{})
	mustAdd(t, s, activeRequest{ID: "a", Worker: w, Hashes: []uint64{1, 2, 3}, ISL: 12})
	s.AddOutputBlock("a", 1)
	if got, want := seqLoad(t, s, w, 1, 2, 7), (workerLoad{ActivePrefillTokens: 12}); got != want {
		t.Errorf("load %+v, want %+v (no decode blocks)", got, want)
	}
	// The scheduler then sees decode = 0 for the known worker.
	sched := newTestScheduler(t, defaultSchedulerConfig(4), nil)
	sel, err := sched.Select(scheduleRequest{Candidates: []Worker{w}, ISL: 8, Loads: s.Loads([]uint64{1, 2})})
	if err != nil {
		t.Fatal(err)
	}
	if c := sel.Costs[0]; c.DecodeBlocks != 0 || c.PrefillTokens != 20 {
		t.Errorf("cost %+v, want decode 0 and prefill 12+8", c)
	}
}

func TestSequencesOutputBlocks(t *testing.T) {
	w := Worker{ID: 1}
	s := newTestSequences(t, defaultSequencesConfig(4), sequencesDeps{})
	mustAdd(t, s, activeRequest{ID: "r1", Worker: w, Hashes: []uint64{1, 2}, ISL: 8, ExpectedOutputTokens: 10})
	mustAdd(t, s, activeRequest{ID: "r2", Worker: w, Hashes: []uint64{2, 3}, ISL: 8})

	s.AddOutputBlock("r2", 4) // no expected length: one more whole block
	if got := seqLoad(t, s, w).ActiveBlocks; got != 4 {
		t.Fatalf("active blocks %d, want 4", got)
	}
	// r1 is half done: its own blocks (1 and the new one) weigh 0.5 each;
	// block 2 is shared with r2 and keeps weight 1. 5 − 2·0.5 = 4.
	s.AddOutputBlock("r1", 5)
	if got := seqLoad(t, s, w).ActiveBlocks; got != 4 {
		t.Fatalf("active blocks %d, want round(5 − 1) = 4", got)
	}
	// Done: six blocks, r1's own three (1 and both output blocks) of
	// weight 0: 6 − 3 = 3.
	s.AddOutputBlock("r1", 10)
	if got := seqLoad(t, s, w).ActiveBlocks; got != 3 {
		t.Fatalf("active blocks %d, want 3", got)
	}
	s.Free("r1")
	if got := seqLoad(t, s, w).ActiveBlocks; got != 3 { // {2, 3, r2's output block}
		t.Fatalf("after free: active blocks %d, want 3", got)
	}
	s.AddOutputBlock("gone", 1) // unknown id: no-op
}

func TestSequencesForceExpiry(t *testing.T) {
	w := Worker{ID: 1}
	now := time.Unix(1000, 0)
	s := newTestSequences(t, defaultSequencesConfig(4), sequencesDeps{Now: func() time.Time { return now }})
	mustAdd(t, s, activeRequest{ID: "leak", Worker: w, ISL: 8})

	now = now.Add(301 * time.Second) // first tick: remembers "leak"
	if exp, err := s.Add(activeRequest{ID: "b", Worker: w, ISL: 8}); err != nil || len(exp) != 0 {
		t.Fatalf("first tick expired %v, %v", exp, err)
	}
	now = now.Add(100 * time.Second) // before the next tick
	if exp, _ := s.Add(activeRequest{ID: "c", Worker: w, ISL: 8}); len(exp) != 0 {
		t.Fatalf("expired %v before the tick", exp)
	}
	now = now.Add(201 * time.Second) // second tick: "leak" is still there
	exp, err := s.Add(activeRequest{ID: "d", Worker: w, ISL: 8})
	if err != nil || !cmp.Equal(exp, []string{"leak"}) {
		t.Fatalf("second tick expired %v, %v; want [leak]", exp, err)
	}
	if n, p := s.Active(), seqLoad(t, s, w).ActivePrefillTokens; n != 3 || p != 24 {
		t.Errorf("after expiry: %d active, %d prefill tokens; want 3, 24", n, p)
	}
	s.Free("leak") // already gone: no-op
}

func TestSequencesUpdateWorkers(t *testing.T) {
	w1, w2, w3 := Worker{ID: 1}, Worker{ID: 2}, Worker{ID: 3}
	s := newTestSequences(t, defaultSequencesConfig(4), sequencesDeps{})
	s.UpdateWorkers([]Worker{w1, w2})
	mustAdd(t, s, activeRequest{ID: "a", Worker: w2, Hashes: []uint64{1}, ISL: 4})
	s.UpdateWorkers([]Worker{w1, w3})
	loads := s.Loads(nil)
	if _, ok := loads[w2]; ok || len(loads) != 2 {
		t.Errorf("loads after update: %v", loads)
	}
	if s.Active() != 0 {
		t.Errorf("requests of a removed worker kept")
	}
	mustAdd(t, s, activeRequest{ID: "a", Worker: w1, ISL: 4}) // the id is free again
	got := s.ActiveLoads()
	if len(got) != 2 || got[0].WorkerID != 1 || got[1].WorkerID != 3 || *got[0].ActivePrefillTokens != 4 {
		t.Errorf("ActiveLoads = %+v", got)
	}
}

// TestSequencesConcurrent adds, completes and frees from many goroutines
// (run with -race) and checks the totals against a sequential count.
func TestSequencesConcurrent(t *testing.T) {
	const (
		goroutines = 8
		perG       = 400
		workers    = 4
		isl        = 32
	)
	var onLoad atomic.Int64
	s := newTestSequences(t, defaultSequencesConfig(16), sequencesDeps{OnLoad: func(activeLoad) { onLoad.Add(1) }})
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				id := fmt.Sprintf("%d-%d", g, i)
				w := Worker{ID: uint64(i % workers)}
				// Block 100 is shared by every request of a worker.
				if _, err := s.Add(activeRequest{ID: id, Worker: w, Hashes: []uint64{100, uint64(1_000_000*g + i)}, ISL: isl}); err != nil {
					t.Error(err)
					return
				}
				_ = s.Loads([]uint64{100})
				switch {
				case i%2 == 0:
					s.Free(id)
				case i%4 == 1:
					s.MarkPrefillCompleted(id)
				}
			}
		})
	}
	wg.Wait()

	want := map[Worker]workerLoad{}
	for w := range workers {
		want[Worker{ID: uint64(w)}] = workerLoad{}
	}
	for range goroutines {
		for i := range perG {
			if i%2 == 0 {
				continue
			}
			w := Worker{ID: uint64(i % workers)}
			l := want[w]
			if l.ActiveBlocks == 0 {
				l.ActiveBlocks = 1 // the shared block
			}
			l.ActiveBlocks++
			if i%4 != 1 {
				l.ActivePrefillTokens += isl
			}
			want[w] = l
		}
	}
	if diff := cmp.Diff(want, s.Loads(nil)); diff != "" {
		t.Errorf("loads (-want +got):\n%s", diff)
	}
	if got, want := s.Active(), goroutines*perG/2; got != want {
		t.Errorf("Active() = %d, want %d", got, want)
	}
	// Every Add, every Free and every prefill completion reports.
	if got, want := onLoad.Load(), int64(goroutines*(perG+perG/2+perG/4)); got != want {
		t.Errorf("OnLoad calls = %d, want %d", got, want)
	}
}

func TestTrackingHashes(t *testing.T) {
	seq := []uint64{5, 6, 7}
	got := trackingHashes(seq, true)
	if !cmp.Equal(got, seq) {
		t.Errorf("assume reuse: %v, want %v", got, seq)
	}
	got[0] = 0
	if seq[0] != 5 {
		t.Error("TrackingHashes aliases its input")
	}
	a, b := trackingHashes(seq, false), trackingHashes(seq, false)
	if len(a) != 3 || cmp.Equal(a, b) || cmp.Equal(a, seq) {
		t.Errorf("random hashes %v, %v", a, b)
	}
}
