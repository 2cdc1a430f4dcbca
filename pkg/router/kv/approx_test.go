package kv

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/google/go-cmp/cmp"
)

// fakeClock is a settable clock for approximate-mode tests.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func checkApprox(t *testing.T, a *approxIndexer, local []uint64, want overlapScores) {
	t.Helper()
	if diff := cmp.Diff(want, a.FindMatches(local)); diff != "" {
		t.Errorf("FindMatches(%v) (-want +got):\n%s", local, diff)
	}
}

func TestApproxRecordRoutingStoresSeqHashes(t *testing.T) {
	a := newApproxIndexer(approxOptions{Clock: newFakeClock().Now})
	local := []uint64{7, 8, 9}
	a.RecordRouting(wA, local)
	a.RecordRouting(wB, nil) // nothing to record

	seq := kvblock.SeqHashes(local)
	want := []kvblock.RouterEvent{
		{WorkerID: wA.ID, Event: kvblock.KVCacheEvent{EventID: 0, Data: kvblock.Stored(nil, blockAt(seq[0], 7))}},
		{WorkerID: wA.ID, Event: kvblock.KVCacheEvent{EventID: 1, Data: kvblock.Stored(&seq[0], blockAt(seq[1], 8))}},
		{WorkerID: wA.ID, Event: kvblock.KVCacheEvent{EventID: 2, Data: kvblock.Stored(&seq[1], blockAt(seq[2], 9))}},
	}
	if diff := cmp.Diff(want, a.idx.Dump()); diff != "" {
		t.Errorf("recorded tree (-want +got):\n%s", diff)
	}
	checkApprox(t, a, []uint64{7, 8, 10}, scores(map[Worker][2]int{wA: {2, 3}}))
	if a.Size() != 3 {
		t.Errorf("Size = %d, want 3", a.Size())
	}
}

func TestApproxTTLExpiry(t *testing.T) {
	clk := newFakeClock()
	a := newApproxIndexer(approxOptions{TTL: 10 * time.Second, Clock: clk.Now})
	a.RecordRouting(wA, []uint64{1, 2, 3})
	clk.Advance(5 * time.Second)
	a.RecordRouting(wB, []uint64{1, 2})

	next, ok := a.expire()
	if want := clk.Now().Add(5 * time.Second); !ok || !next.Equal(want) {
		t.Errorf("next expiry = %v, %v; want %v", next, ok, want)
	}
	clk.Advance(5*time.Second - time.Nanosecond)
	a.expire()
	checkApprox(t, a, []uint64{1, 2, 3}, scores(map[Worker][2]int{wA: {3, 3}, wB: {2, 2}}))

	clk.Advance(time.Nanosecond) // wA's blocks are due
	a.expire()
	checkApprox(t, a, []uint64{1, 2, 3}, scores(map[Worker][2]int{wB: {2, 2}}))
	if a.Size() != 2 {
		t.Errorf("Size = %d, want 2", a.Size())
	}
	clk.Advance(5 * time.Second)
	if _, ok := a.expire(); ok {
		t.Error("entries left after every expiry")
	}
	checkApprox(t, a, []uint64{1, 2, 3}, scores(nil))
	if a.Size() != 0 {
		t.Errorf("Size = %d, want 0", a.Size())
	}
}

func TestApproxRefreshOnReRouting(t *testing.T) {
	clk := newFakeClock()
	a := newApproxIndexer(approxOptions{TTL: 120 * time.Second, Clock: clk.Now})
	a.RecordRouting(wA, []uint64{1, 2, 3})
	clk.Advance(60 * time.Second)
	a.RecordRouting(wA, []uint64{1, 2}) // refreshes the prefix only

	clk.Advance(60 * time.Second)
	a.expire()
	checkApprox(t, a, []uint64{1, 2, 3}, scores(map[Worker][2]int{wA: {2, 2}}))
	clk.Advance(60 * time.Second)
	a.expire()
	checkApprox(t, a, []uint64{1, 2, 3}, scores(nil))
}

func TestApproxPruneOldestFirst(t *testing.T) {
	clk := newFakeClock()
	a := newApproxIndexer(approxOptions{MaxTreeSize: 10, PruneTargetRatio: 0.5, Clock: clk.Now})
	a.RecordRouting(wA, []uint64{1, 2, 3, 4})
	clk.Advance(time.Second)
	a.RecordRouting(wB, []uint64{1, 2, 3, 4})
	clk.Advance(time.Second)
	a.RecordRouting(wC, []uint64{1, 2})
	if a.Size() != 10 {
		t.Fatalf("Size = %d, want 10 (not over the limit yet)", a.Size())
	}
	clk.Advance(time.Second)
	a.RecordRouting(wC, []uint64{1, 2, 3, 4}) // 12 > 10: prune down to 5

	if a.Size() != 5 {
		t.Errorf("Size = %d, want floor(10*0.5) = 5", a.Size())
	}
	// wA's (oldest) go first, then wB's deepest; wB keeps its first block.
	checkApprox(t, a, []uint64{1, 2, 3, 4}, scores(map[Worker][2]int{wB: {1, 1}, wC: {4, 4}}))
}

func TestApproxPruneDeeperFirstOnTies(t *testing.T) {
	a := newApproxIndexer(approxOptions{MaxTreeSize: 5, PruneTargetRatio: 0.6, Clock: newFakeClock().Now})
	a.RecordRouting(wA, []uint64{1, 2, 3, 4})
	a.RecordRouting(wB, []uint64{5, 6}) // same expiry; 6 > 5: prune to 3
	if a.Size() != 3 {
		t.Errorf("Size = %d, want floor(5*0.6) = 3", a.Size())
	}
	// Positions 3, 2, then 1 (wA before wB among equals) go.
	checkApprox(t, a, []uint64{1, 2, 3, 4}, scores(map[Worker][2]int{wA: {1, 1}}))
	checkApprox(t, a, []uint64{5, 6}, scores(map[Worker][2]int{wB: {2, 2}}))
}

func TestApproxRemoveWorker(t *testing.T) {
	clk := newFakeClock()
	a := newApproxIndexer(approxOptions{TTL: time.Second, Clock: clk.Now})
	a.RecordRouting(wA, []uint64{1, 2})
	a.RecordRouting(wA1, []uint64{1, 2})
	a.RecordRouting(wB, []uint64{1})
	a.RemoveWorker(wA.ID)
	checkApprox(t, a, []uint64{1, 2}, scores(map[Worker][2]int{wB: {1, 1}}))
	if len(a.timers) != 1 {
		t.Errorf("%d timers left, want 1", len(a.timers))
	}
	clk.Advance(time.Second)
	a.expire()
	if a.Size() != 0 || len(a.timers) != 0 || len(a.queue) != 0 {
		t.Errorf("after expiry: size %d, %d timers, %d queued", a.Size(), len(a.timers), len(a.queue))
	}
}

func TestApproxQueueCompaction(t *testing.T) {
	a := newApproxIndexer(approxOptions{Clock: newFakeClock().Now})
	for range 200 {
		a.RecordRouting(wA, []uint64{1}) // one live timer, stale entries pile up
	}
	if len(a.queue) > 64 {
		t.Errorf("queue holds %d entries for %d timers", len(a.queue), len(a.timers))
	}
}

// TestApproxRun drives the expiry loop with a fake clock: no sleeping.
func TestApproxRun(t *testing.T) {
	clk := newFakeClock()
	a := newApproxIndexer(approxOptions{TTL: time.Minute, Clock: clk.Now})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()

	a.RecordRouting(wA, []uint64{1, 2})
	clk.Advance(time.Minute)
	a.RecordRouting(wB, []uint64{3}) // wakes Run, which finds wA's blocks due
	deadline := time.Now().Add(10 * time.Second)
	for a.Size() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("Size = %d after waiting, want 1", a.Size())
		}
		time.Sleep(time.Millisecond)
	}
	checkApprox(t, a, []uint64{1, 2}, scores(nil))
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

// TestApproxRunRealClock checks that Run sleeps until the next expiry.
func TestApproxRunRealClock(t *testing.T) {
	a := newApproxIndexer(approxOptions{TTL: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	a.RecordRouting(wA, []uint64{1, 2})
	deadline := time.Now().Add(10 * time.Second)
	for a.Size() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("Size = %d after waiting, want 0", a.Size())
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
}
