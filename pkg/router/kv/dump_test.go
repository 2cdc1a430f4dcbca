package kv

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/google/go-cmp/cmp"
)

func TestDumpFormat(t *testing.T) {
	x := newIndexer(indexerOptions{})
	storeChain(t, x, wB, 11, 12)
	storeChain(t, x, wA, 11)

	h11, h12 := seqOf(11), seqOf(11, 12)
	want := []kvblock.RouterEvent{
		{WorkerID: wA.ID, Event: kvblock.KVCacheEvent{EventID: 0, Data: kvblock.Stored(nil, kvblock.StoredBlock{BlockHash: h11, TokensHash: 11})}},
		{WorkerID: wB.ID, Event: kvblock.KVCacheEvent{EventID: 1, Data: kvblock.Stored(nil, kvblock.StoredBlock{BlockHash: h11, TokensHash: 11})}},
		{WorkerID: wB.ID, Event: kvblock.KVCacheEvent{EventID: 2, Data: kvblock.Stored(&h11, kvblock.StoredBlock{BlockHash: h12, TokensHash: 12})}},
	}
	if diff := cmp.Diff(want, x.Dump()); diff != "" {
		t.Errorf("Dump (-want +got):\n%s", diff)
	}
	if got := newIndexer(indexerOptions{}).Dump(); len(got) != 0 {
		t.Errorf("empty Dump = %v", got)
	}
}

// TestDumpReplay dumps indexers fed random streams, replays the dump into
// fresh indexers and compares random queries. With prefix-closed streams
// everything matches, tree sizes included; with arbitrary removals the
// scores match (unreachable blocks are not dumped, and a worker caching
// a block below one it dropped fails to replay it, so tree sizes may
// shrink).
func TestDumpReplay(t *testing.T) {
	for _, prefixClosed := range []bool{true, false} {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("prefixClosed=%v/seed=%d", prefixClosed, seed), func(t *testing.T) {
				g := newEventGen(200+seed, testWorkers(1, 6), prefixClosed)
				x := newIndexer(indexerOptions{})
				for step := range 3000 {
					g.step(t, x)
					if step%500 != 499 {
						continue
					}
					dump := x.Dump()
					y := newIndexer(indexerOptions{})
					for i, ev := range dump {
						if ev.Event.EventID != uint64(i) {
							t.Fatalf("dump event %d has id %d", i, ev.Event.EventID)
						}
						err := y.Apply(context.Background(), ev)
						if !prefixClosed && errors.Is(err, errParentBlockNotFound) {
							continue // a worker caching a block but not its parent: unreachable anyway
						}
						if err != nil {
							t.Fatalf("replaying %+v: %v", ev, err)
						}
					}
					if prefixClosed && y.Size() != x.Size() {
						t.Errorf("step %d: replayed Size = %d, want %d", step, y.Size(), x.Size())
					}
					for range 300 {
						q := g.query()
						want, got := x.FindMatches(q), y.FindMatches(q)
						if !prefixClosed {
							want.TreeSizes, got.TreeSizes = nil, nil
						}
						if diff := cmp.Diff(want, got); diff != "" {
							t.Fatalf("step %d: FindMatches(%v) (-original +replayed):\n%s", step, q, diff)
						}
					}
					if diff := cmp.Diff(dump, y.Dump()); prefixClosed && diff != "" {
						t.Errorf("step %d: Dump of the replay differs (-original +replayed):\n%s", step, diff)
					}
				}
			})
		}
	}
}
