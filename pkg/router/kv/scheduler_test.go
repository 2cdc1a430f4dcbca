package kv

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/runtime"
	"github.com/google/go-cmp/cmp"
)

// newTestScheduler builds a scheduler with a seeded random source.
func newTestScheduler(t *testing.T, cfg schedulerConfig, busy busyChecker) *Scheduler {
	t.Helper()
	s, err := newScheduler(cfg, schedulerDeps{Busy: busy, Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func schedLogits(sel selection) map[Worker]float64 {
	out := make(map[Worker]float64, len(sel.Costs))
	for _, c := range sel.Costs {
		out[c.Worker] = c.Logit
	}
	return out
}

// TestSchedulerDocsExample reproduces the reference docs' example (spec
// §4.2): a 10-block request, W1 caching 2 blocks with 10 decode blocks,
// W2 caching 5 with 5, W3 caching 8 with 9; weight 1 gives 18, 10, 11 and
// picks W2. The other rows vary one input each.
func TestSchedulerDocsExample(t *testing.T) {
	const bs = 16
	w1, w2, w3 := Worker{ID: 1}, Worker{ID: 2}, Worker{ID: 3}
	overlaps := overlapScores{
		Scores:    map[Worker]uint32{w1: 2, w2: 5, w3: 8},
		TreeSizes: map[Worker]int{w1: 40, w2: 50, w3: 60},
	}
	// Decode blocks = active + new: 10, 5 and 9.
	docsLoads := func() map[Worker]workerLoad {
		return map[Worker]workerLoad{
			w1: {ActiveBlocks: 2, NewBlocks: 8},
			w2: {ActiveBlocks: 0, NewBlocks: 5},
			w3: {ActiveBlocks: 7, NewBlocks: 2},
		}
	}
	withPrefill := docsLoads()
	l := withPrefill[w2]
	l.ActivePrefillTokens = 4 * bs // 4 queued blocks on W2
	withPrefill[w2] = l
	withoutW1 := docsLoads()
	delete(withoutW1, w1)

	tests := []struct {
		name    string
		weight  float64
		isl     int
		loads   map[Worker]workerLoad
		want    Worker
		overlap uint32
		logits  map[Worker]float64
	}{
		{name: "docs example, weight 1", weight: 1, isl: 10 * bs, loads: docsLoads(),
			want: w2, overlap: 5, logits: map[Worker]float64{w1: 8 + 10, w2: 5 + 5, w3: 2 + 9}},
		{name: "weight 2 favours the cache", weight: 2, isl: 10 * bs, loads: docsLoads(),
			want: w3, overlap: 8, logits: map[Worker]float64{w1: 2*8 + 10, w2: 2*5 + 5, w3: 2*2 + 9}},
		{name: "weight 0 is pure load balancing", weight: 0, isl: 10 * bs, loads: docsLoads(),
			want: w2, overlap: 5, logits: map[Worker]float64{w1: 10, w2: 5, w3: 9}},
		{name: "queued prefill tokens count", weight: 1, isl: 10 * bs, loads: withPrefill,
			want: w3, overlap: 8, logits: map[Worker]float64{w1: 18, w2: (5 + 4) + 5, w3: 11}},
		{name: "prefill blocks are not rounded", weight: 1, isl: 10*bs + 8, loads: docsLoads(),
			want: w2, overlap: 5, logits: map[Worker]float64{w1: 8.5 + 10, w2: 5.5 + 5, w3: 2.5 + 9}},
		{name: "worker without load: prefill = ISL, decode = floor", weight: 1, isl: 10*bs + 8, loads: withoutW1,
			want: w2, overlap: 5, logits: map[Worker]float64{w1: 10.5 + 10, w2: 5.5 + 5, w3: 2.5 + 9}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestScheduler(t, schedulerConfig{OverlapScoreWeight: tc.weight, BlockSize: bs}, nil)
			sel, err := s.Select(scheduleRequest{Candidates: []Worker{w3, w1, w2}, ISL: tc.isl, Overlaps: overlaps, Loads: tc.loads})
			if err != nil {
				t.Fatal(err)
			}
			if sel.Worker != tc.want || sel.OverlapBlocks != tc.overlap {
				t.Errorf("chose %+v with %d blocks, want %+v with %d", sel.Worker, sel.OverlapBlocks, tc.want, tc.overlap)
			}
			if want := (tc.isl + bs - 1) / bs; sel.RequiredBlocks != want {
				t.Errorf("RequiredBlocks = %d, want %d", sel.RequiredBlocks, want)
			}
			if diff := cmp.Diff(tc.logits, schedLogits(sel)); diff != "" {
				t.Errorf("logits (-want +got):\n%s", diff)
			}
			if sel.Logit != tc.logits[tc.want] {
				t.Errorf("Logit = %v, want %v", sel.Logit, tc.logits[tc.want])
			}
		})
	}
}

func TestSchedulerCostTerms(t *testing.T) {
	w := Worker{ID: 9, DPRank: 1}
	s := newTestScheduler(t, defaultSchedulerConfig(4), nil)
	sel, err := s.Select(scheduleRequest{
		Candidates: []Worker{w},
		ISL:        10,
		Overlaps:   overlapScores{Scores: map[Worker]uint32{w: 1}, TreeSizes: map[Worker]int{w: 7}},
		Loads:      map[Worker]workerLoad{w: {ActivePrefillTokens: 6, ActiveBlocks: 3, NewBlocks: 2}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []workerCost{{
		Worker: w, OverlapBlocks: 1, TreeSize: 7,
		PrefillTokens: 6 + (10 - 4), PrefillBlocks: 3, DecodeBlocks: 5, Logit: 8,
	}}
	if diff := cmp.Diff(want, sel.Costs); diff != "" {
		t.Errorf("costs (-want +got):\n%s", diff)
	}
	if sel.RequiredBlocks != 3 {
		t.Errorf("RequiredBlocks = %d, want ceil(10/4) = 3", sel.RequiredBlocks)
	}
}

// tieCase describes candidates by logit (through their decode blocks)
// and tree size; a negative tree size means none.
type tieCase struct {
	name    string
	decode  []int
	tree    []int
	allowed []int // indexes that may be chosen
	uniform bool  // the allowed ones equally often
}

// TestSchedulerTieBreaks covers spec §4.3 at temperature 0, one rule per
// case: the minimum logit wins; among equal logits the smallest tree size;
// among equal tree sizes uniformly at random.
func TestSchedulerTieBreaks(t *testing.T) {
	tests := []tieCase{
		{name: "unique minimum wins whatever its tree size", decode: []int{5, 3, 4}, tree: []int{1, 100, 2}, allowed: []int{1}},
		{name: "equal logits: smallest tree size", decode: []int{3, 3, 4}, tree: []int{10, 3, 1}, allowed: []int{1}},
		{name: "equal logits, no tree size counts as 0", decode: []int{3, 3}, tree: []int{4, -1}, allowed: []int{1}},
		{name: "equal logits and tree sizes: uniform", decode: []int{3, 3, 3, 4}, tree: []int{5, 5, 5, 0}, allowed: []int{0, 1, 2}, uniform: true},
		{name: "smallest tree size shared: uniform among those", decode: []int{3, 3, 3}, tree: []int{5, 9, 5}, allowed: []int{0, 2}, uniform: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cands []Worker
			ov := overlapScores{Scores: map[Worker]uint32{}, TreeSizes: map[Worker]int{}}
			loads := map[Worker]workerLoad{}
			for i := range tc.decode {
				w := Worker{ID: uint64(100 + i)}
				cands = append(cands, w)
				loads[w] = workerLoad{ActiveBlocks: tc.decode[i]}
				if tc.tree[i] >= 0 {
					ov.TreeSizes[w] = tc.tree[i]
				}
			}
			s := newTestScheduler(t, defaultSchedulerConfig(16), nil)
			const draws = 3000
			counts := map[int]int{}
			for range draws {
				sel, err := s.Select(scheduleRequest{Candidates: cands, ISL: 32, Overlaps: ov, Loads: loads})
				if err != nil {
					t.Fatal(err)
				}
				counts[int(sel.Worker.ID-100)]++
			}
			allowed := map[int]bool{}
			for _, i := range tc.allowed {
				allowed[i] = true
			}
			for i, n := range counts {
				if !allowed[i] {
					t.Errorf("candidate %d chosen %d times; allowed %v", i, n, tc.allowed)
				}
			}
			if tc.uniform {
				want := 1 / float64(len(tc.allowed))
				for _, i := range tc.allowed {
					if got := float64(counts[i]) / draws; math.Abs(got-want) > 0.05 {
						t.Errorf("candidate %d frequency %.3f, want %.3f ± 0.05", i, got, want)
					}
				}
			}
		})
	}
}

// TestSchedulerSoftmax samples 20,000 seeded draws per temperature and
// compares the frequencies with p_i ∝ exp(−(L_i − L_min)/((L_max − L_min)·T)),
// computed here from the logits alone.
func TestSchedulerSoftmax(t *testing.T) {
	decode := []int{2, 5, 6, 12}
	var cands []Worker
	loads := map[Worker]workerLoad{}
	for i, d := range decode {
		w := Worker{ID: uint64(i + 1)}
		cands = append(cands, w)
		loads[w] = workerLoad{ActiveBlocks: d}
	}
	// ISL 0: the logit is the decode blocks alone.
	logits := []float64{2, 5, 6, 12}
	for _, temp := range []float64{0.25, 0.5, 1, 3} {
		t.Run("T="+strconv.FormatFloat(temp, 'g', -1, 64), func(t *testing.T) {
			lo, hi := 2.0, 12.0
			want := make([]float64, len(logits))
			sum := 0.0
			for i, l := range logits {
				want[i] = math.Exp(-(l - lo) / ((hi - lo) * temp))
				sum += want[i]
			}
			for i := range want {
				want[i] /= sum
			}
			if r := want[0] / want[3]; math.Abs(r-math.Exp(1/temp)) > 1e-9*r {
				t.Fatalf("best/worst = %v, want exp(1/T) = %v", r, math.Exp(1/temp))
			}

			s := newTestScheduler(t, schedulerConfig{OverlapScoreWeight: 1, Temperature: temp, BlockSize: 16}, nil)
			const draws = 20000
			counts := make([]int, len(logits))
			for range draws {
				sel, err := s.Select(scheduleRequest{Candidates: cands, Loads: loads})
				if err != nil {
					t.Fatal(err)
				}
				counts[sel.Worker.ID-1]++
			}
			for i := range want {
				got := float64(counts[i]) / draws
				// 4.5 standard deviations of a binomial frequency.
				tol := 4.5*math.Sqrt(want[i]*(1-want[i])/draws) + 1e-3
				if math.Abs(got-want[i]) > tol {
					t.Errorf("worker %d: frequency %.4f, want %.4f ± %.4f", i+1, got, want[i], tol)
				}
			}
		})
	}
}

func TestSchedulerSoftmaxEqualLogitsUniform(t *testing.T) {
	cands := []Worker{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}}
	s := newTestScheduler(t, schedulerConfig{OverlapScoreWeight: 1, Temperature: 0.1, BlockSize: 16}, nil)
	const draws = 8000
	counts := map[uint64]int{}
	for range draws {
		sel, err := s.Select(scheduleRequest{Candidates: cands, ISL: 64})
		if err != nil {
			t.Fatal(err)
		}
		counts[sel.Worker.ID]++
	}
	for id := uint64(1); id <= 4; id++ {
		if got := float64(counts[id]) / draws; math.Abs(got-0.25) > 0.025 {
			t.Errorf("worker %d frequency %.3f, want 0.25", id, got)
		}
	}
}

func TestSchedulerOverride(t *testing.T) {
	w1, w2 := Worker{ID: 1}, Worker{ID: 2}
	req := scheduleRequest{
		Candidates: []Worker{w1, w2},
		ISL:        64,
		Overlaps:   overlapScores{Scores: map[Worker]uint32{w1: 4}},
		Loads:      map[Worker]workerLoad{w1: {ActiveBlocks: 3}, w2: {}},
	}
	s := newTestScheduler(t, defaultSchedulerConfig(16), nil)
	// Weight 1: w1 = 0 + 3, w2 = 4 + 0.
	if sel, err := s.Select(req); err != nil || sel.Worker != w1 {
		t.Fatalf("Select = %+v, %v; want w1", sel.Worker, err)
	}
	// Weight 0: w1 = 3, w2 = 0.
	req.Override.OverlapScoreWeight = new(0.0)
	if sel, err := s.Select(req); err != nil || sel.Worker != w2 {
		t.Fatalf("with weight override: %+v, %v; want w2", sel.Worker, err)
	}
	req.Override.Temperature = new(-1.0)
	if _, err := s.Select(req); err == nil {
		t.Fatal("negative temperature override accepted")
	}
}

type busySet map[uint64]bool

func (b busySet) Busy(id uint64) bool { return b[id] }

func TestSchedulerBusyAndErrors(t *testing.T) {
	w1, w2, w3 := Worker{ID: 1}, Worker{ID: 2}, Worker{ID: 2, DPRank: 1}
	ov := overlapScores{Scores: map[Worker]uint32{w2: 4, w3: 4}}
	req := scheduleRequest{Candidates: []Worker{w1, w2, w3, w2}, ISL: 64, Overlaps: ov}

	s := newTestScheduler(t, defaultSchedulerConfig(16), busySet{2: true})
	sel, err := s.Select(req)
	if err != nil {
		t.Fatal(err)
	}
	if sel.Worker != w1 || len(sel.Costs) != 1 {
		t.Errorf("busy worker 2 not skipped: chose %+v among %d", sel.Worker, len(sel.Costs))
	}

	s = newTestScheduler(t, defaultSchedulerConfig(16), busySet{1: true, 2: true})
	_, err = s.Select(req)
	if !errors.Is(err, errAllWorkersBusy) || !errors.Is(err, runtime.ErrWorkerOverloaded) {
		t.Errorf("all busy: err = %v, want ErrAllWorkersBusy and runtime.ErrWorkerOverloaded", err)
	}
	var re *runtime.Error
	if !errors.As(err, &re) || re.Message == "" {
		t.Errorf("all busy: no *runtime.Error with a message in %v", err)
	}

	if _, err := s.Select(scheduleRequest{ISL: 64}); !errors.Is(err, errNoWorkers) {
		t.Errorf("no candidates: err = %v, want ErrNoWorkers", err)
	}
	if _, err := s.Select(scheduleRequest{Candidates: []Worker{w1}, ISL: -1}); err == nil {
		t.Error("negative ISL accepted")
	}
	sel, err = newTestScheduler(t, defaultSchedulerConfig(16), nil).Select(req)
	if err != nil || len(sel.Costs) != 3 {
		t.Errorf("duplicates not removed: %d costs, err %v", len(sel.Costs), err)
	}
}

func TestSchedulerConfigValidate(t *testing.T) {
	for _, cfg := range []schedulerConfig{
		{BlockSize: 0, OverlapScoreWeight: 1},
		{BlockSize: 16, OverlapScoreWeight: -1},
		{BlockSize: 16, OverlapScoreWeight: math.NaN()},
		{BlockSize: 16, Temperature: -0.5},
		{BlockSize: 16, Temperature: math.Inf(1)},
	} {
		if _, err := newScheduler(cfg, schedulerDeps{}); err == nil {
			t.Errorf("NewScheduler(%+v) accepted", cfg)
		}
	}
	if _, err := newScheduler(defaultSchedulerConfig(16), schedulerDeps{}); err != nil {
		t.Errorf("default config rejected: %v", err)
	}
	if got := defaultSchedulerConfig(8); got.OverlapScoreWeight != 1 || got.Temperature != 0 || got.BlockSize != 8 {
		t.Errorf("DefaultSchedulerConfig = %+v", got)
	}
}

// TestSchedulerDefaultRandConcurrent runs Select without an injected
// source from several goroutines (run with -race).
func TestSchedulerDefaultRandConcurrent(t *testing.T) {
	s, err := newScheduler(schedulerConfig{OverlapScoreWeight: 1, Temperature: 1, BlockSize: 16}, schedulerDeps{})
	if err != nil {
		t.Fatal(err)
	}
	seeded := newTestScheduler(t, schedulerConfig{OverlapScoreWeight: 1, Temperature: 1, BlockSize: 16}, nil)
	req := scheduleRequest{Candidates: []Worker{{ID: 1}, {ID: 2}}, ISL: 64,
		Loads: map[Worker]workerLoad{{ID: 1}: {ActiveBlocks: 1}, {ID: 2}: {ActiveBlocks: 2}}}
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 200 {
				if _, err := s.Select(req); err != nil {
					t.Error(err)
				}
				if _, err := seeded.Select(req); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
}
