package kv

import (
	"context"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/google/go-cmp/cmp"
)

// chainBlocks returns the stored blocks of a prompt whose local hashes
// follow parentSeq (0 with hasParent false: from the root), with block
// hashes chained like the mocker's (kvblock.SeqHash).
func chainBlocks(parentSeq uint64, hasParent bool, local ...uint64) []kvblock.StoredBlock {
	out := make([]kvblock.StoredBlock, len(local))
	for i, l := range local {
		var h uint64
		if i == 0 && !hasParent {
			h = l
		} else {
			h = kvblock.SeqHash(parentSeq, l)
		}
		out[i] = kvblock.StoredBlock{BlockHash: h, TokensHash: l}
		parentSeq = h
	}
	return out
}

// seqOf returns the sequence hash of the last block of local.
func seqOf(local ...uint64) uint64 {
	s := kvblock.SeqHashes(local)
	return s[len(s)-1]
}

func storedEv(w Worker, parent *uint64, blocks ...kvblock.StoredBlock) kvblock.RouterEvent {
	return kvblock.RouterEvent{WorkerID: w.ID, Event: kvblock.KVCacheEvent{DPRank: w.DPRank, Data: kvblock.Stored(parent, blocks...)}}
}

func removedEv(w Worker, hashes ...uint64) kvblock.RouterEvent {
	return kvblock.RouterEvent{WorkerID: w.ID, Event: kvblock.KVCacheEvent{DPRank: w.DPRank, Data: kvblock.Removed(hashes...)}}
}

func clearedEv(w Worker) kvblock.RouterEvent {
	return kvblock.RouterEvent{WorkerID: w.ID, Event: kvblock.KVCacheEvent{DPRank: w.DPRank, Data: kvblock.Cleared()}}
}

// storeChain stores a prompt's blocks from the root for w.
func storeChain(t testing.TB, x *indexer, w Worker, local ...uint64) {
	t.Helper()
	mustApply(t, x, storedEv(w, nil, chainBlocks(0, false, local...)...))
}

func mustApply(t testing.TB, x *indexer, ev kvblock.RouterEvent) {
	t.Helper()
	if err := x.Apply(context.Background(), ev); err != nil {
		t.Fatalf("Apply(%+v): %v", ev, err)
	}
}

func ptr[T any](v T) *T { return &v }

// scores builds an overlapScores from worker → (score, tree size) pairs.
func scores(m map[Worker][2]int) overlapScores {
	o := overlapScores{Scores: map[Worker]uint32{}, TreeSizes: map[Worker]int{}}
	for w, v := range m {
		o.Scores[w] = uint32(v[0])
		o.TreeSizes[w] = v[1]
	}
	return o
}

func checkMatches(t testing.TB, x *indexer, local []uint64, want overlapScores) {
	t.Helper()
	if diff := cmp.Diff(want, x.FindMatches(local)); diff != "" {
		t.Errorf("FindMatches(%v) (-want +got):\n%s", local, diff)
	}
}

// blockAt returns a stored block with the given block hash and a local
// hash, for hand-made (possibly invalid) sequences.
func blockAt(hash, local uint64) kvblock.StoredBlock {
	return kvblock.StoredBlock{BlockHash: hash, TokensHash: local}
}
