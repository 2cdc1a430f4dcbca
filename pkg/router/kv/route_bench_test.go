package kv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

// Routing benchmark workload: prompts of 64 blocks of 16 tokens, each a
// 16-block prefix shared with other prompts (one of 32 "system prompts")
// followed by 48 blocks of its own, as in BenchmarkFindMatches.
const (
	routeBlockSize = 16
	routePrompts   = 1024
)

// routeWorkload returns an indexer in which each of nw workers (ids 1..nw)
// holds 32 random prompts, and the prompts' tokens.
func routeWorkload(nw int) (*indexer, [][]uint32) {
	rng := rand.New(rand.NewPCG(5, 6))
	systems := make([][]uint32, benchSystems)
	for i := range systems {
		systems[i] = make([]uint32, benchShared*routeBlockSize)
		for j := range systems[i] {
			systems[i][j] = rng.Uint32()
		}
	}
	prompts := make([][]uint32, routePrompts)
	for i := range prompts {
		p := append(make([]uint32, 0, benchBlocks*routeBlockSize), systems[i%benchSystems]...)
		for len(p) < cap(p) {
			p = append(p, rng.Uint32())
		}
		prompts[i] = p
	}
	x := newIndexer(indexerOptions{})
	for _, w := range testWorkerRange(0, nw) {
		for range 32 {
			local := kvblock.LocalHashes(prompts[rng.IntN(len(prompts))], routeBlockSize)
			p := benchPrompt{local: local, seq: kvblock.SeqHashes(local)}
			_ = x.Apply(context.Background(), p.store(w))
		}
	}
	return x, prompts
}

// BenchmarkSelect measures scheduler.Select alone: every worker is a
// candidate with an idle load entry, and the overlaps are one of 64
// prompts' matches, computed beforehand (FindMatchesInto, as the router
// does).
//
//	go test -run '^$' -bench 'Select|Choose' -benchmem ./pkg/router/kv/
func BenchmarkSelect(b *testing.B) {
	for _, nw := range []int{100, 1000} {
		b.Run(fmt.Sprintf("workers=%d", nw), func(b *testing.B) {
			x, prompts := routeWorkload(nw)
			s, err := newScheduler(defaultSchedulerConfig(routeBlockSize), schedulerDeps{})
			if err != nil {
				b.Fatal(err)
			}
			cands := testWorkerRange(0, nw)
			loads := make(map[Worker]workerLoad, nw)
			for _, w := range cands {
				loads[w] = workerLoad{}
			}
			overlaps := make([]*matches, 64)
			for i := range overlaps {
				overlaps[i] = new(matches)
				x.FindMatchesInto(overlaps[i], kvblock.LocalHashes(prompts[i*7%len(prompts)], routeBlockSize))
			}
			i := 0
			for b.Loop() {
				_, err := s.Select(scheduleRequest{Candidates: cands, ISL: benchBlocks * routeBlockSize,
					Overlaps: overlaps[i%len(overlaps)], Loads: loads})
				if err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// benchTarget is a Pusher with nw instances that is never called.
type benchTarget struct{ ids []uint64 }

func (t *benchTarget) Available() []uint64 { return t.ids }
func (t *benchTarget) Generate(context.Context, *backend.Request, func(*backend.Output) error) error {
	panic("not called")
}
func (t *benchTarget) GenerateOn(context.Context, uint64, *backend.Request, func(*backend.Output) error) error {
	panic("not called")
}

// BenchmarkChoose measures the router's whole decision for one request
// (routeStage.choose, what Decide costs): hashing a 1,024-token prompt into
// blocks, matching it, the candidates' loads and scheduler.Select, with
// every worker available and idle.
func BenchmarkChoose(b *testing.B) {
	for _, nw := range []int{100, 1000} {
		b.Run(fmt.Sprintf("workers=%d", nw), func(b *testing.B) {
			x, prompts := routeWorkload(nw)
			sched, err := newScheduler(defaultSchedulerConfig(routeBlockSize), schedulerDeps{})
			if err != nil {
				b.Fatal(err)
			}
			seqs, err := newSequences(defaultSequencesConfig(routeBlockSize), sequencesDeps{})
			if err != nil {
				b.Fatal(err)
			}
			tgt := &benchTarget{}
			for _, w := range testWorkerRange(0, nw) {
				tgt.ids = append(tgt.ids, w.ID)
			}
			r := newRouteStage(routeConfig{BlockSize: routeBlockSize}, routeDeps{Next: tgt, Matcher: x, scheduler: sched, sequences: seqs})
			reqs := make([]backend.Request, 64)
			for i := range reqs {
				reqs[i].TokenIDs = prompts[i*7%len(prompts)]
			}
			i := 0
			for b.Loop() {
				if _, err := r.choose(&reqs[i%len(reqs)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
