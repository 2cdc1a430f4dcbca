package kv

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/dynamo-go/dynamo/pkg/router"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// fakeTarget records where requests went and answers with one token.
type fakeTarget struct {
	workers []uint64
	mu      sync.Mutex
	sent    []uint64
	during  func() // called while a request is "generating"
}

func (f *fakeTarget) Available() []uint64 { return f.workers }
func (f *fakeTarget) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	return f.GenerateOn(ctx, *req.Routing.BackendInstanceID, req, emit)
}
func (f *fakeTarget) GenerateOn(_ context.Context, id uint64, req *backend.Request, emit func(*backend.Output) error) error {
	f.mu.Lock()
	f.sent = append(f.sent, id)
	f.mu.Unlock()
	if err := emit(backend.Tokens(1)); err != nil {
		return err
	}
	if f.during != nil {
		f.during()
	}
	return emit(backend.Length(2))
}

func newTestRouter(t *testing.T, idx *indexer, tgt *fakeTarget) (*routeStage, *Sequences) {
	t.Helper()
	sched, err := newScheduler(defaultSchedulerConfig(4), schedulerDeps{})
	if err != nil {
		t.Fatal(err)
	}
	seqs, err := newSequences(defaultSequencesConfig(4), sequencesDeps{})
	if err != nil {
		t.Fatal(err)
	}
	return newRouteStage(routeConfig{BlockSize: 4}, routeDeps{Next: tgt, Matcher: idx, scheduler: sched, sequences: seqs}), seqs
}

// cache tells idx that worker w holds the full blocks of tokens.
func cache(t *testing.T, idx *indexer, w uint64, tokens []uint32) {
	t.Helper()
	local := kvblock.LocalHashes(tokens, 4)
	seq := kvblock.SeqHashes(local)
	var blocks []kvblock.StoredBlock
	for i := range local {
		blocks = append(blocks, kvblock.StoredBlock{BlockHash: seq[i], TokensHash: local[i]})
	}
	ev := kvblock.RouterEvent{WorkerID: w, Event: kvblock.KVCacheEvent{Data: kvblock.Stored(nil, blocks...)}}
	if err := idx.Apply(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
}

func tokens(n int, salt uint32) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = salt*1000 + uint32(i)
	}
	return out
}

// route sends a request through r and returns the placement its outputs
// carry.
func route(t *testing.T, r *routeStage, id string, toks []uint32) *backend.Placement {
	t.Helper()
	var got *backend.Placement
	rc := runtime.NewContext(context.Background(), id)
	defer rc.Release()
	req := &backend.Request{TokenIDs: toks, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr(uint32(2))}}
	err := r.Generate(rc, req, func(out *backend.Output) error {
		if got != nil && out.Placement != got {
			t.Errorf("request %s: outputs carry different placements %+v and %+v", id, got, out.Placement)
		}
		got = out.Placement
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || got.DPRank == nil || got.OverlapBlocks == nil || got.PromptBlocks == nil {
		t.Fatalf("request %s: outputs carry placement %+v, want the full decision", id, got)
	}
	return got
}

func TestRouterFollowsTheCachedPrefix(t *testing.T) {
	idx := newIndexer(indexerOptions{})
	tgt := &fakeTarget{workers: []uint64{1, 2, 3}}
	r, _ := newTestRouter(t, idx, tgt)
	long := tokens(64, 7)
	cache(t, idx, 2, long[:48]) // worker 2 holds the first 12 blocks
	for i := range 5 {
		d := route(t, r, "req-"+string(rune('a'+i)), append(append([]uint32{}, long...), tokens(8, uint32(10+i))...))
		if d.WorkerID != 2 || *d.OverlapBlocks != 12 || *d.PromptBlocks != 18 {
			t.Fatalf("request %d: placed on %x with %d of %d blocks cached, want worker 2 with 12 of 18", i, d.WorkerID, *d.OverlapBlocks, *d.PromptBlocks)
		}
	}
}

func TestRouterSpreadsLoadWithoutOverlap(t *testing.T) {
	idx := newIndexer(indexerOptions{})
	tgt := &fakeTarget{workers: []uint64{1, 2}}
	r, seqs := newTestRouter(t, idx, tgt)
	// While the first request is generating, a second unrelated one must
	// go to the other, idle worker: the first one's load is tracked.
	var second *backend.Placement
	tgt.during = func() {
		tgt.during = nil
		if seqs.Active() != 1 {
			t.Errorf("active requests %d, want 1", seqs.Active())
		}
		second = route(t, r, "b", tokens(32, 2))
	}
	first := route(t, r, "a", tokens(32, 1))
	if first.WorkerID == second.WorkerID {
		t.Errorf("both requests went to worker %d; the second should avoid the loaded one", first.WorkerID)
	}
	if seqs.Active() != 0 {
		t.Errorf("active requests %d after both ended, want 0", seqs.Active())
	}
}

func TestRouterHonoursAPinnedWorker(t *testing.T) {
	idx := newIndexer(indexerOptions{})
	tgt := &fakeTarget{workers: []uint64{1, 2}}
	r, _ := newTestRouter(t, idx, tgt)
	cache(t, idx, 2, tokens(16, 1))
	rc := runtime.NewContext(context.Background(), "p")
	defer rc.Release()
	req := &backend.Request{TokenIDs: tokens(16, 1), Routing: &backend.Routing{BackendInstanceID: backend.Ptr(uint64(1))}}
	if err := r.Generate(rc, req, func(*backend.Output) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if len(tgt.sent) != 1 || tgt.sent[0] != 1 {
		t.Errorf("sent to %v, want the pinned worker 1", tgt.sent)
	}
}

// Decide answers where a request would go, as Generate would place it,
// without sending it or counting its load.
func TestRouterDecideChangesNothing(t *testing.T) {
	idx := newIndexer(indexerOptions{})
	tgt := &fakeTarget{workers: []uint64{1, 2, 3}}
	r, seqs := newTestRouter(t, idx, tgt)
	long := tokens(40, 3)
	cache(t, idx, 3, long[:32])
	req := &backend.Request{TokenIDs: long}
	for range 3 {
		p, err := r.Decide(req)
		if err != nil {
			t.Fatal(err)
		}
		if p.WorkerID != 3 || *p.OverlapBlocks != 8 || *p.PromptBlocks != 10 {
			t.Fatalf("decided worker %x with %d of %d blocks cached, want worker 3 with 8 of 10", p.WorkerID, *p.OverlapBlocks, *p.PromptBlocks)
		}
	}
	if len(tgt.sent) != 0 || seqs.Active() != 0 {
		t.Fatalf("a decision sent %v and left %d active requests; want nothing sent, nothing tracked", tgt.sent, seqs.Active())
	}
	if got := route(t, r, "q", long); got.WorkerID != 3 {
		t.Errorf("the request went to %x after the decision named 3", got.WorkerID)
	}
	pinned := &backend.Request{TokenIDs: long, Routing: &backend.Routing{BackendInstanceID: backend.Ptr(uint64(2))}}
	if p, err := r.Decide(pinned); err != nil || p.WorkerID != 2 {
		t.Errorf("a pinned request decided %+v, %v; want its instance 2", p, err)
	}
	empty, _ := newTestRouter(t, idx, &fakeTarget{})
	if _, err := empty.Decide(req); !errors.Is(err, router.ErrNoInstances) {
		t.Errorf("no workers: %v, want router.ErrNoInstances", err)
	}
}

// The decode overrides of a disaggregated request (router_config_override
// overlap_score_weight 0, assume_kv_reuse false): the blocks of a request
// identical to one in flight count as new load, so it goes to the idle
// worker rather than the one the shared prefix would favour.
func TestRouterDecodeOverrides(t *testing.T) {
	idx := newIndexer(indexerOptions{})
	tgt := &fakeTarget{workers: []uint64{1, 2}}
	r, _ := newTestRouter(t, idx, tgt)
	prompt := tokens(32, 1)
	var busy uint64
	var others []uint64
	tgt.during = func() {
		tgt.during = nil
		for i := range 8 {
			rc := runtime.NewContext(context.Background(), "b"+string(rune('0'+i)))
			req := &backend.Request{TokenIDs: prompt, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr(uint32(2))},
				RouterConfigOverride: []byte(`{"overlap_score_weight":0,"assume_kv_reuse":false}`)}
			p, err := r.Decide(req)
			rc.Release()
			if err != nil {
				t.Error(err)
				return
			}
			others = append(others, p.WorkerID)
		}
	}
	busy = route(t, r, "a", prompt).WorkerID
	for _, w := range others {
		if w == busy {
			t.Fatalf("with KV reuse not assumed, a request identical to the one in flight on %d was placed there too (%v)", busy, others)
		}
	}
}
