package kv

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// errNoWorkers is returned by scheduler.Select when it has no candidate.
var errNoWorkers = errors.New("kv: no workers to route to")

// errAllWorkersBusy is returned by scheduler.Select when every candidate is
// busy. The returned error also matches runtime.ErrWorkerOverloaded, so the
// frontend answers with its overload status.
var errAllWorkersBusy = errors.New("kv: all workers are busy")

// errAllBusy is what Select returns: the overload class, then the specific
// sentinel.
var errAllBusy = fmt.Errorf("%w: %w",
	runtime.NewError(runtime.TypeWorkerOverloaded, "all workers are busy"), errAllWorkersBusy)

// defaultOverlapScoreWeight is the reference system's default
// overlap_score_weight (--router-kv-overlap-score-weight).
const defaultOverlapScoreWeight = 1.0

// schedulerConfig configures a scheduler.
type schedulerConfig struct {
	// OverlapScoreWeight multiplies the prefill term of the cost. It must
	// be >= 0. Zero means pure load balancing (the prefill term, and so the
	// prefix overlap, is ignored); defaultSchedulerConfig sets the
	// reference default 1.0.
	OverlapScoreWeight float64
	// Temperature is the softmax temperature (--router-temperature). It
	// must be >= 0; zero means always the cheapest worker.
	Temperature float64
	// BlockSize is the KV block size in tokens. It must be > 0.
	BlockSize int
}

// defaultSchedulerConfig returns the reference defaults for blockSize:
// weight 1.0, temperature 0.
func defaultSchedulerConfig(blockSize int) schedulerConfig {
	return schedulerConfig{OverlapScoreWeight: defaultOverlapScoreWeight, BlockSize: blockSize}
}

// Validate reports every invalid field.
func (c schedulerConfig) Validate() error {
	var errs []error
	if c.BlockSize <= 0 {
		errs = append(errs, fmt.Errorf("kv: scheduler: block size %d must be positive", c.BlockSize))
	}
	if !(c.OverlapScoreWeight >= 0) || math.IsInf(c.OverlapScoreWeight, 1) {
		errs = append(errs, fmt.Errorf("kv: scheduler: overlap score weight %v must be finite and >= 0", c.OverlapScoreWeight))
	}
	if !(c.Temperature >= 0) || math.IsInf(c.Temperature, 1) {
		errs = append(errs, fmt.Errorf("kv: scheduler: temperature %v must be finite and >= 0", c.Temperature))
	}
	return errors.Join(errs...)
}

// busyChecker tells the scheduler whether a worker is busy (all its
// data-parallel ranks over a threshold). *LoadMonitor implements it.
type busyChecker interface {
	Busy(workerID uint64) bool
}

var _ busyChecker = (*LoadMonitor)(nil)

// schedulerDeps are the collaborators of a scheduler; every field may be
// nil.
type schedulerDeps struct {
	// Busy excludes busy workers; nil means no worker is ever busy.
	Busy busyChecker
	// Rand is the random source for softmax draws and tie-breaks; nil
	// means the math/rand/v2 package source. The scheduler serialises its
	// use, so a seeded *rand.Rand makes a single-goroutine test
	// reproducible.
	Rand *rand.Rand
	// Logger receives the per-candidate cost lines at debug level; nil
	// discards.
	Logger *slog.Logger
}

// configOverride carries per-request overrides of the configuration
// (router_config_override); nil fields keep the configured value.
type configOverride struct {
	// OverlapScoreWeight replaces schedulerConfig.OverlapScoreWeight.
	OverlapScoreWeight *float64 `json:"overlap_score_weight,omitempty"`
	// Temperature replaces schedulerConfig.Temperature.
	Temperature *float64 `json:"router_temperature,omitempty"`
	// AssumeKVReuse, when false, counts every block of the request as new
	// load on the chosen worker, even blocks other active requests share
	// (the reference system's assume_kv_reuse; the prefill stage turns it
	// off for the decode half of a disaggregated request, whose blocks
	// arrive from the prefill worker).
	AssumeKVReuse *bool `json:"assume_kv_reuse,omitempty"`
}

// overlaps is a prefix match result as the scheduler reads it: *matches
// (indexer.FindMatchesInto, which allocates nothing) and overlapScores
// (maps) implement it.
type overlaps interface {
	// Overlap returns w's overlap score (cached leading blocks) and tree
	// size (cached blocks in all), 0 and 0 for a worker without a score.
	Overlap(w Worker) (score uint32, treeSize int)
}

// scheduleRequest is the input of one worker selection.
type scheduleRequest struct {
	// Candidates are the (worker, dp rank) pairs that may serve the
	// request; duplicates are ignored.
	Candidates []Worker
	// ISL is the prompt length in tokens (>= 0).
	ISL int
	// overlaps are the indexer's prefix matches for the prompt's blocks
	// (a *matches or an overlapScores); a candidate without a score, or
	// every candidate if overlaps is nil, has overlap 0 and tree size 0.
	Overlaps overlaps
	// Loads is the router-side load per candidate (sequences.Loads); a
	// candidate missing from it is costed as if idle and unknown (see
	// workerCost).
	Loads map[Worker]workerLoad
	// configOverride holds per-request overrides.
	Override configOverride
}

// selection is the outcome of scheduler.Select.
type selection struct {
	// Worker is the chosen (worker, dp rank).
	Worker Worker
	// OverlapBlocks is the chosen worker's overlap score (cached prefix
	// blocks).
	OverlapBlocks uint32
	// RequiredBlocks is ceil(ISL / block size).
	RequiredBlocks int
	// Logit is the chosen worker's cost.
	Logit float64
	// Costs has one entry per non-busy candidate, sorted by worker id and
	// dp rank; they double as the request's potential loads.
	Costs []workerCost
}

// scheduler picks a worker for each request by the E1 cost function and
// the temperature rules of the reference system. It is safe for
// concurrent use.
type Scheduler struct {
	cfg  schedulerConfig
	busy busyChecker
	log  *slog.Logger

	mu  sync.Mutex // guards rnd
	rnd *rand.Rand
}

// newScheduler returns a scheduler, or the configuration's validation
// error.
func newScheduler(cfg schedulerConfig, deps schedulerDeps) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Scheduler{cfg: cfg, busy: deps.Busy, log: log, rnd: deps.Rand}, nil
}

// Config returns the scheduler's configuration.
func (s *Scheduler) Config() schedulerConfig { return s.cfg }

// Select chooses a worker among req.Candidates. Busy candidates are
// skipped; if all are busy it returns errAllWorkersBusy (wrapped with
// runtime.ErrWorkerOverloaded), and errNoWorkers if there is none. An
// invalid override or a negative ISL is an error too.
func (s *Scheduler) Select(req scheduleRequest) (selection, error) {
	weight, temp := s.cfg.OverlapScoreWeight, s.cfg.Temperature
	if o := req.Override.OverlapScoreWeight; o != nil {
		weight = *o
	}
	if o := req.Override.Temperature; o != nil {
		temp = *o
	}
	if !(weight >= 0) || math.IsInf(weight, 1) || !(temp >= 0) || math.IsInf(temp, 1) {
		return selection{}, fmt.Errorf("kv: select: invalid override (weight %v, temperature %v)", weight, temp)
	}
	if req.ISL < 0 {
		return selection{}, fmt.Errorf("kv: select: negative ISL %d", req.ISL)
	}

	cands := schedCandidates(req.Candidates)
	if len(cands) == 0 {
		return selection{}, errNoWorkers
	}
	if s.busy != nil {
		cands = slices.DeleteFunc(cands, func(w Worker) bool { return s.busy.Busy(w.ID) })
		if len(cands) == 0 {
			return selection{}, errAllBusy
		}
	}

	costs := make([]workerCost, len(cands))
	for i, w := range cands {
		costs[i] = s.cost(w, req, weight)
	}
	i := s.pick(costs, temp)
	c := costs[i]
	s.log.Debug("kv: selected worker", "worker_id", c.Worker.ID, "dp_rank", c.Worker.DPRank,
		"logit", c.Logit, "cached_blocks", c.OverlapBlocks, "tree_size", c.TreeSize)
	return selection{
		Worker:         c.Worker,
		OverlapBlocks:  c.OverlapBlocks,
		RequiredBlocks: (req.ISL + s.cfg.BlockSize - 1) / s.cfg.BlockSize,
		Logit:          c.Logit,
		Costs:          costs,
	}, nil
}

// schedCandidates returns the candidates sorted by (id, dp rank) without
// duplicates, in a new slice.
func schedCandidates(in []Worker) []Worker {
	out := slices.Clone(in)
	slices.SortFunc(out, compareWorkers)
	return slices.Compact(out)
}

// compareWorkers orders workers by id, then dp rank.
func compareWorkers(a, b Worker) int {
	switch {
	case a.ID < b.ID:
		return -1
	case a.ID > b.ID:
		return 1
	case a.DPRank < b.DPRank:
		return -1
	case a.DPRank > b.DPRank:
		return 1
	}
	return 0
}
