package kv

import (
	"context"
	"log/slog"
	"math"
)

// workerLoad is the router-side load of one (worker, dp rank), as
// sequences.Loads reports it for one request's blocks.
type workerLoad struct {
	// ActivePrefillTokens are the prompt tokens routed to the worker whose
	// prefill has not completed.
	ActivePrefillTokens int
	// ActiveBlocks are the distinct blocks referenced by the worker's
	// active requests (fractional output blocks discounted); 0 when
	// active-block tracking is off.
	ActiveBlocks int
	// NewBlocks are the request's blocks not referenced by any active
	// request on the worker; 0 when active-block tracking is off.
	NewBlocks int
}

// workerCost is the E1 cost of routing one request to one candidate, with
// the terms it is made of. PrefillTokens and DecodeBlocks are the
// candidate's potential loads (get_potential_loads).
type workerCost struct {
	// Worker is the candidate.
	Worker Worker
	// OverlapBlocks is the candidate's overlap score (0 if it has none).
	OverlapBlocks uint32
	// TreeSize is the number of blocks the indexer holds for the candidate
	// (0 if unknown); the temperature-0 tie-break prefers smaller.
	TreeSize int
	// PrefillTokens = active prefill tokens + max(0, ISL − overlap·block
	// size); ISL alone when the candidate has no load entry.
	PrefillTokens int
	// PrefillBlocks = PrefillTokens / block size, not rounded.
	PrefillBlocks float64
	// DecodeBlocks = active blocks + new blocks; floor(PrefillBlocks) when
	// the candidate has no load entry.
	DecodeBlocks int
	// Logit = weight · PrefillBlocks + DecodeBlocks; lower is better.
	Logit float64
}

// cost computes the E1 cost of candidate w (spec §4.2).
func (s *Scheduler) cost(w Worker, req scheduleRequest, weight float64) workerCost {
	bs := s.cfg.BlockSize
	var overlap uint32
	var tree int
	if req.Overlaps != nil {
		overlap, tree = req.Overlaps.Overlap(w)
	}
	c := workerCost{Worker: w, OverlapBlocks: overlap, TreeSize: tree}
	load, known := req.Loads[w]
	if known {
		c.PrefillTokens = load.ActivePrefillTokens + max(0, req.ISL-int(overlap)*bs)
	} else {
		c.PrefillTokens = req.ISL
	}
	c.PrefillBlocks = float64(c.PrefillTokens) / float64(bs)
	if known {
		c.DecodeBlocks = load.ActiveBlocks + load.NewBlocks
	} else {
		c.DecodeBlocks = int(math.Floor(c.PrefillBlocks))
	}
	c.Logit = weight*c.PrefillBlocks + float64(c.DecodeBlocks)
	if s.log.Enabled(context.Background(), slog.LevelDebug) {
		s.log.Debug("kv: cost", "formula", "L = w * prefill_blocks + decode_blocks",
			"worker_id", w.ID, "dp_rank", w.DPRank, "cached_blocks", overlap,
			"w", weight, "prefill_blocks", c.PrefillBlocks, "decode_blocks", c.DecodeBlocks, "L", c.Logit)
	}
	return c
}
