package kv

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/google/go-cmp/cmp"
)

var (
	wA  = Worker{ID: 1}
	wA1 = Worker{ID: 1, DPRank: 1}
	wB  = Worker{ID: 2}
	wC  = Worker{ID: 3}
)

func TestIndexerStoredFromRoot(t *testing.T) {
	x := newIndexer(indexerOptions{})
	storeChain(t, x, wA, 11, 12, 13)

	checkMatches(t, x, []uint64{11, 12, 13}, scores(map[Worker][2]int{wA: {3, 3}}))
	checkMatches(t, x, []uint64{11, 12, 13, 14}, scores(map[Worker][2]int{wA: {3, 3}}))
	checkMatches(t, x, []uint64{11, 12, 99}, scores(map[Worker][2]int{wA: {2, 3}}))
	checkMatches(t, x, []uint64{11}, scores(map[Worker][2]int{wA: {1, 3}}))
	checkMatches(t, x, []uint64{12, 13}, scores(nil)) // a miss at the first block
	checkMatches(t, x, nil, scores(nil))
	if got := x.Size(); got != 3 {
		t.Errorf("Size = %d, want 3", got)
	}
	if diff := cmp.Diff([]Worker{wA}, x.Workers()); diff != "" {
		t.Errorf("Workers (-want +got):\n%s", diff)
	}
}

func TestIndexerStoredFromParent(t *testing.T) {
	x := newIndexer(indexerOptions{})
	storeChain(t, x, wA, 11, 12)
	mustApply(t, x, storedEv(wA, ptr(seqOf(11, 12)), chainBlocks(seqOf(11, 12), true, 13, 14)...))

	checkMatches(t, x, []uint64{11, 12, 13, 14}, scores(map[Worker][2]int{wA: {4, 4}}))
}

func TestIndexerStoredParentMissing(t *testing.T) {
	x := newIndexer(indexerOptions{})
	storeChain(t, x, wA, 11)
	err := x.Apply(context.Background(), storedEv(wB, ptr(seqOf(11)), chainBlocks(seqOf(11), true, 12)...))
	if !errors.Is(err, errParentBlockNotFound) {
		t.Fatalf("err = %v, want ErrParentBlockNotFound", err)
	}
	// The event was skipped, but the worker is registered (as the
	// reference's lookup entry is created first).
	checkMatches(t, x, []uint64{11, 12}, scores(map[Worker][2]int{wA: {1, 1}}))
	if got := x.Size(); got != 1 {
		t.Errorf("Size = %d, want 1", got)
	}
	if diff := cmp.Diff([]Worker{wA, wB}, x.Workers()); diff != "" {
		t.Errorf("Workers (-want +got):\n%s", diff)
	}
}

func TestIndexerStoredReusesNodes(t *testing.T) {
	x := newIndexer(indexerOptions{})
	storeChain(t, x, wA, 11, 12, 13)
	storeChain(t, x, wB, 11, 12, 14)
	storeChain(t, x, wA, 11, 12, 13) // again: nothing changes

	checkMatches(t, x, []uint64{11, 12, 13}, scores(map[Worker][2]int{wA: {3, 3}, wB: {2, 3}}))
	checkMatches(t, x, []uint64{11, 12, 14}, scores(map[Worker][2]int{wA: {2, 3}, wB: {3, 3}}))
	// Shared prefix nodes carry both workers: 2 + 2 + 1 + 1 memberships.
	if got := len(x.Dump()); got != 6 {
		t.Errorf("Dump has %d events, want 6 (shared nodes reused)", got)
	}
	if got := x.Size(); got != 6 {
		t.Errorf("Size = %d, want 6", got)
	}

	// A worker extending from a parent joins the node another worker
	// created at that position.
	mustApply(t, x, storedEv(wB, ptr(seqOf(11, 12)), chainBlocks(seqOf(11, 12), true, 13)...))
	checkMatches(t, x, []uint64{11, 12, 13}, scores(map[Worker][2]int{wA: {3, 3}, wB: {3, 4}}))
	if got := len(x.Dump()); got != 7 {
		t.Errorf("Dump has %d events, want 7", got)
	}
}

func TestIndexerStoredSelfReference(t *testing.T) {
	x := newIndexer(indexerOptions{})
	storeChain(t, x, wA, 11, 12)
	h12 := seqOf(11, 12)

	// The parent block appears among the blocks.
	err := x.Apply(context.Background(), storedEv(wA, &h12, kvblock.StoredBlock{BlockHash: h12, TokensHash: 77}))
	if !errors.Is(err, errInvalidBlockSequence) {
		t.Fatalf("err = %v, want ErrInvalidBlockSequence", err)
	}
	checkMatches(t, x, []uint64{11, 12, 77}, scores(map[Worker][2]int{wA: {2, 2}}))

	// A block repeated further down would become its own descendant; the
	// blocks before it are applied.
	err = x.Apply(context.Background(), storedEv(wB, nil,
		kvblock.StoredBlock{BlockHash: 501, TokensHash: 1},
		kvblock.StoredBlock{BlockHash: 502, TokensHash: 2},
		kvblock.StoredBlock{BlockHash: 501, TokensHash: 3},
	))
	if !errors.Is(err, errInvalidBlockSequence) {
		t.Fatalf("err = %v, want ErrInvalidBlockSequence", err)
	}
	checkMatches(t, x, []uint64{1, 2, 3}, scores(map[Worker][2]int{wB: {2, 2}}))
	if len(x.Dump()) != 4 {
		t.Errorf("Dump = %v, want 4 events", x.Dump())
	}
}

func TestIndexerRemovedContinuesPastMissing(t *testing.T) {
	x := newIndexer(indexerOptions{})
	storeChain(t, x, wA, 11, 12, 13)
	err := x.Apply(context.Background(), removedEv(wA, seqOf(11, 12, 13), 999, 998, seqOf(11, 12)))
	if !errors.Is(err, errBlockNotFound) {
		t.Fatalf("err = %v, want ErrBlockNotFound", err)
	}
	if want := "999"; !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want it to name the first missing hash %s", err, want)
	}
	checkMatches(t, x, []uint64{11, 12, 13}, scores(map[Worker][2]int{wA: {1, 1}}))
	if got := x.Size(); got != 1 {
		t.Errorf("Size = %d, want 1", got)
	}

	// Removing for a worker never seen registers it and fails.
	if err := x.Apply(context.Background(), removedEv(wC, 5)); !errors.Is(err, errBlockNotFound) {
		t.Errorf("err = %v, want ErrBlockNotFound", err)
	}
	if diff := cmp.Diff([]Worker{wA, wC}, x.Workers()); diff != "" {
		t.Errorf("Workers (-want +got):\n%s", diff)
	}
}

func TestIndexerRemovedEmptiedNodeDropsSubtree(t *testing.T) {
	x := newIndexer(indexerOptions{})
	storeChain(t, x, wA, 11, 12, 13)
	storeChain(t, x, wB, 21)

	// wA drops its first block only: the node is empty, its subtree goes.
	mustApply(t, x, removedEv(wA, seqOf(11)))
	checkMatches(t, x, []uint64{11, 12, 13}, scores(nil))
	// The blocks below stay in wA's lookup (tree size) as in the
	// reference, unreachable for matching.
	if got := x.Size(); got != 3 {
		t.Errorf("Size = %d, want 3", got)
	}
	checkMatches(t, x, []uint64{21}, scores(map[Worker][2]int{wB: {1, 1}}))

	// Storing the first block again does not bring the subtree back...
	storeChain(t, x, wA, 11)
	checkMatches(t, x, []uint64{11, 12, 13}, scores(map[Worker][2]int{wA: {1, 3}}))
	// ...storing the second one from it relinks the dropped subtree (the
	// reference reuses the node from the worker's lookup).
	mustApply(t, x, storedEv(wA, ptr(seqOf(11)), chainBlocks(seqOf(11), true, 12)...))
	checkMatches(t, x, []uint64{11, 12, 13}, scores(map[Worker][2]int{wA: {3, 3}}))
	// And the lookup entries below a dropped node can still be removed.
	mustApply(t, x, removedEv(wA, seqOf(11, 12, 13), seqOf(11, 12), seqOf(11)))
	if got := x.Size(); got != 1 {
		t.Errorf("Size = %d, want 1", got)
	}
}

func TestIndexerRemovedSharedNodeKeepsSubtree(t *testing.T) {
	x := newIndexer(indexerOptions{})
	storeChain(t, x, wA, 11, 12, 13)
	storeChain(t, x, wB, 11, 12)

	// wA leaves the middle block; wB still has it, so nothing is dropped.
	mustApply(t, x, removedEv(wA, seqOf(11, 12)))
	// Scores are contiguous prefixes: wA caches block 3 but not block 2.
	checkMatches(t, x, []uint64{11, 12, 13}, scores(map[Worker][2]int{wA: {1, 2}, wB: {2, 2}}))
	mustApply(t, x, storedEv(wA, ptr(seqOf(11)), chainBlocks(seqOf(11), true, 12)...))
	checkMatches(t, x, []uint64{11, 12, 13}, scores(map[Worker][2]int{wA: {3, 3}, wB: {2, 2}}))
}

func TestIndexerClearedKeepsWorker(t *testing.T) {
	for _, viaEvent := range []bool{true, false} {
		x := newIndexer(indexerOptions{})
		storeChain(t, x, wA, 11, 12)
		storeChain(t, x, wA1, 11, 12)
		storeChain(t, x, wB, 11)
		if viaEvent {
			mustApply(t, x, clearedEv(wA))
		} else {
			x.ClearWorker(wA)
		}
		// Only the emitting dp rank is cleared; it stays registered.
		checkMatches(t, x, []uint64{11, 12}, scores(map[Worker][2]int{wA1: {2, 2}, wB: {1, 1}}))
		if diff := cmp.Diff([]Worker{wA, wA1, wB}, x.Workers()); diff != "" {
			t.Errorf("viaEvent=%v: Workers (-want +got):\n%s", viaEvent, diff)
		}
		if got := x.Size(); got != 3 {
			t.Errorf("viaEvent=%v: Size = %d, want 3", viaEvent, got)
		}
		storeChain(t, x, wA, 11)
		checkMatches(t, x, []uint64{11, 12}, scores(map[Worker][2]int{wA: {1, 1}, wA1: {2, 2}, wB: {1, 1}}))
	}
}

func TestIndexerRemoveWorker(t *testing.T) {
	x := newIndexer(indexerOptions{})
	storeChain(t, x, wA, 11, 12)
	storeChain(t, x, wA1, 11, 13)
	storeChain(t, x, wB, 11, 12)

	x.RemoveWorker(wA.ID) // every dp rank
	checkMatches(t, x, []uint64{11, 12}, scores(map[Worker][2]int{wB: {2, 2}}))
	if diff := cmp.Diff([]Worker{wB}, x.Workers()); diff != "" {
		t.Errorf("Workers (-want +got):\n%s", diff)
	}
	if got := x.Size(); got != 2 {
		t.Errorf("Size = %d, want 2", got)
	}
	x.RemoveWorker(wA.ID) // idempotent
	x.RemoveWorker(42)    // unknown

	// A worker that comes back starts from nothing.
	storeChain(t, x, wA, 11)
	checkMatches(t, x, []uint64{11, 12}, scores(map[Worker][2]int{wA: {1, 1}, wB: {2, 2}}))
	if got := x.Size(); got != 3 {
		t.Errorf("Size = %d, want 3", got)
	}
}

func TestIndexerFindMatchesScoresPerWorker(t *testing.T) {
	x := newIndexer(indexerOptions{})
	storeChain(t, x, wA, 1, 2, 3, 4, 5)
	storeChain(t, x, wB, 1, 2, 3)
	storeChain(t, x, wB, 7)
	storeChain(t, x, wC, 1, 9)
	storeChain(t, x, wA1, 1, 2, 3, 4, 5, 6)

	checkMatches(t, x, []uint64{1, 2, 3, 4, 5, 6, 7},
		scores(map[Worker][2]int{wA: {5, 5}, wA1: {6, 6}, wB: {3, 4}, wC: {1, 2}}))
	checkMatches(t, x, []uint64{1, 9}, scores(map[Worker][2]int{wA: {1, 5}, wA1: {1, 6}, wB: {1, 4}, wC: {2, 2}}))
	checkMatches(t, x, []uint64{7, 1}, scores(map[Worker][2]int{wB: {1, 4}}))
	checkMatches(t, x, []uint64{2, 3}, scores(nil))
}

// TestIndexerSpecExample replays the JSON events of spec §1.1: a block
// stored under a parent the router never saw, its removal, and a clear.
func TestIndexerSpecExample(t *testing.T) {
	lines := []string{
		`{"worker_id": 7587886413599009306, "event": {"event_id": 42, "dp_rank": 0, "data": {"stored": {"parent_hash": 1188, "blocks": [{"block_hash": 99123, "tokens_hash": 3480597578098033343, "mm_extra_info": null}]}}}}`,
		`{"worker_id": 7587886413599009306, "event": {"event_id": 43, "dp_rank": 0, "data": {"removed": {"block_hashes": [99123]}}}}`,
		`{"worker_id": 7587886413599009306, "event": {"event_id": 44, "dp_rank": 0, "data": "cleared"}}`,
	}
	wantErr := []error{errParentBlockNotFound, errBlockNotFound, nil}
	x := newIndexer(indexerOptions{})
	for i, l := range lines {
		var ev kvblock.RouterEvent
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatal(err)
		}
		if err := x.Apply(context.Background(), ev); !errors.Is(err, wantErr[i]) || (err == nil) != (wantErr[i] == nil) {
			t.Errorf("event %d: err = %v, want %v", i, err, wantErr[i])
		}
	}
	// With the parent known, the same stored event applies.
	w := Worker{ID: 7587886413599009306}
	mustApply(t, x, storedEv(w, nil, kvblock.StoredBlock{BlockHash: 1188, TokensHash: 5}))
	var ev kvblock.RouterEvent
	if err := json.Unmarshal([]byte(lines[0]), &ev); err != nil {
		t.Fatal(err)
	}
	mustApply(t, x, ev)
	checkMatches(t, x, []uint64{5, 3480597578098033343}, scores(map[Worker][2]int{w: {2, 2}}))
}

func TestIndexerApplyRejects(t *testing.T) {
	x := newIndexer(indexerOptions{})
	if err := x.Apply(context.Background(), kvblock.RouterEvent{WorkerID: 1}); !errors.Is(err, kvblock.ErrBadEvent) {
		t.Errorf("empty data: err = %v, want kvblock.ErrBadEvent", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := x.Apply(ctx, storedEv(wA, nil, chainBlocks(0, false, 1)...)); !errors.Is(err, context.Canceled) {
		t.Errorf("ended ctx: err = %v, want context.Canceled", err)
	}
	if len(x.Workers()) != 0 || x.Size() != 0 {
		t.Errorf("rejected events changed the indexer: workers %v, size %d", x.Workers(), x.Size())
	}
}

func TestIndexerRunBlocksUntilDone(t *testing.T) {
	x := newIndexer(indexerOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- x.Run(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

// TestIndexerMismatchedBlockHash covers engines that disagree on a block's
// hash: the second worker joins the node made by the first (the
// reference warns and does the same) under its own hash.
func TestIndexerMismatchedBlockHash(t *testing.T) {
	x := newIndexer(indexerOptions{})
	mustApply(t, x, storedEv(wA, nil, blockAt(500, 1)))
	mustApply(t, x, storedEv(wB, nil, blockAt(600, 1)))
	mustApply(t, x, storedEv(wB, nil, blockAt(600, 1))) // again
	mustApply(t, x, storedEv(wB, ptr(uint64(600)), blockAt(601, 2)))
	checkMatches(t, x, []uint64{1, 2}, scores(map[Worker][2]int{wA: {1, 1}, wB: {2, 2}}))
	// The node keeps the first hash; wB's child dumps under it.
	dump := x.Dump()
	if len(dump) != 3 || *dump[2].Event.Data.Stored.ParentHash != 500 {
		t.Errorf("Dump = %+v, want wB's block 601 under 500", dump)
	}

	// Storing under the node's own hash too maps both hashes to it.
	mustApply(t, x, storedEv(wB, nil, blockAt(500, 1)))
	if x.Size() != 4 {
		t.Errorf("Size = %d, want 4", x.Size())
	}
	mustApply(t, x, removedEv(wB, 601, 600))
	checkMatches(t, x, []uint64{1, 2}, scores(map[Worker][2]int{wA: {1, 1}}))
	if err := x.Apply(context.Background(), removedEv(wB, 600)); !errors.Is(err, errBlockNotFound) {
		t.Errorf("second removal: err = %v, want ErrBlockNotFound", err)
	}
	// wB's entry for 500 survives (membership is not counted per hash,
	// as in the reference), so a store under it is accepted, but wB is
	// no longer in the first node and matches nothing.
	mustApply(t, x, storedEv(wB, ptr(uint64(500)), blockAt(601, 2)))
	checkMatches(t, x, []uint64{1, 2}, scores(map[Worker][2]int{wA: {1, 1}}))
	if x.Size() != 3 {
		t.Errorf("Size = %d, want 3", x.Size())
	}
}
