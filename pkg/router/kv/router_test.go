package kv

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// fakePlane is an event plane that records subscriptions.
type fakePlane struct {
	has  bool
	mu   sync.Mutex
	subs []string
}

func (p *fakePlane) HasEventPlane() bool { return p.has }
func (p *fakePlane) InstanceID() uint64  { return 99 }
func (p *fakePlane) Publish(context.Context, string, []byte) error {
	if !p.has {
		return runtime.ErrNoEventPlane
	}
	return nil
}

func (p *fakePlane) Subscribe(ctx context.Context, subject string, _ func([]byte)) error {
	if !p.has {
		return runtime.ErrNoEventPlane
	}
	p.mu.Lock()
	p.subs = append(p.subs, subject)
	p.mu.Unlock()
	return nil
}

// dumpQuerier answers every dump request with the blocks of tokens for
// worker holder.
type dumpQuerier struct {
	holder uint64
	tokens []uint32
	asked  []uint64
}

func (q *dumpQuerier) Query(_ context.Context, w Worker, _ kvblock.QueryRequest) (kvblock.QueryResponse, error) {
	q.asked = append(q.asked, w.ID)
	if w.ID != q.holder {
		return kvblock.QueryResponse{TreeDump: []kvblock.RouterEvent{}}, nil
	}
	local := kvblock.LocalHashes(q.tokens, 4)
	seq := kvblock.SeqHashes(local)
	var blocks []kvblock.StoredBlock
	for i := range local {
		blocks = append(blocks, kvblock.StoredBlock{BlockHash: seq[i], TokensHash: local[i]})
	}
	ev := kvblock.RouterEvent{WorkerID: w.ID, Event: kvblock.KVCacheEvent{EventID: 1, Data: kvblock.Stored(nil, blocks...)}}
	return kvblock.QueryResponse{TreeDump: []kvblock.RouterEvent{ev}}, nil
}

func newTestKVRouter(t *testing.T, cfg Config, plane *fakePlane, q Querier, tgt *fakeTarget) *Router {
	t.Helper()
	m, err := NewRouter(cfg, ModelInfo{Name: "m", Endpoint: runtime.EndpointID{Namespace: "ns", Component: "c", Name: "generate"},
		BlockSize: 4, Capacity: WorkerCapacity{TotalKVBlocks: 1000}}, RouterDeps{Events: plane, Querier: q, Next: tgt})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A joining worker's cached blocks are known when AddWorker returns: the
// next routing decision counts them.
func TestModelLoadsAJoiningWorkersCache(t *testing.T) {
	prefix := tokens(32, 5)
	q := &dumpQuerier{holder: 2, tokens: prefix}
	tgt := &fakeTarget{workers: []uint64{1, 2}}
	m := newTestKVRouter(t, Config{}, &fakePlane{has: true}, q, tgt)
	if mode, fallback := m.Mode(); mode != ModeEvents || fallback {
		t.Fatalf("Mode() = %s, %v; want events", mode, fallback)
	}
	m.AddWorker(t.Context(), 1)
	m.AddWorker(t.Context(), 2)
	if !slices.Equal(q.asked, []uint64{1, 2}) {
		t.Errorf("dumps asked of %v, want each joining worker once", q.asked)
	}
	p, err := m.Decide(&backend.Request{TokenIDs: append(append([]uint32{}, prefix...), tokens(8, 6)...)})
	if err != nil || p.WorkerID != 2 || *p.OverlapBlocks != 8 {
		t.Fatalf("Decide = %+v, %v; want worker 2 with its 8 dumped blocks", p, err)
	}
	m.RemoveWorker(2)
	tgt.workers = []uint64{1}
	if p, _ := m.Decide(&backend.Request{TokenIDs: prefix}); p.WorkerID != 1 || *p.OverlapBlocks != 0 {
		t.Errorf("after worker 2 left: %+v, want worker 1 with nothing cached", p)
	}
}

// Run holds the subscriptions until its context ends; without an event
// plane, KV routing falls back to approximate mode and says so.
func TestModelRunAndFallback(t *testing.T) {
	plane := &fakePlane{has: true}
	m := newTestKVRouter(t, Config{ReplicaSync: true}, plane, &dumpQuerier{}, &fakeTarget{workers: []uint64{1}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v after its context ended, want nil", err)
	}
	want := []string{kvblock.LoadMetricsSubject("ns"), kvblock.ComponentSubject("ns", "c", activeSequencesTopic), kvblock.KVEventsSubject("ns", "c")}
	if !slices.Equal(plane.subs, want) {
		t.Errorf("subscribed to %v, want %v", plane.subs, want)
	}

	none := &fakePlane{}
	approx := newTestKVRouter(t, Config{}, none, nil, &fakeTarget{workers: []uint64{1}})
	if mode, fallback := approx.Mode(); mode != ModeApproximate || !fallback {
		t.Errorf("without an event plane: Mode() = %s, %v; want approximate as a fallback", mode, fallback)
	}
	chosen := newTestKVRouter(t, Config{NoEvents: true}, none, nil, &fakeTarget{workers: []uint64{1}})
	if mode, fallback := chosen.Mode(); mode != ModeApproximate || fallback {
		t.Errorf("with NoEvents: Mode() = %s, %v; want approximate by choice", mode, fallback)
	}
	ctx, cancel = context.WithCancel(context.Background())
	go func() { done <- approx.Run(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("approximate Run = %v after its context ended, want nil", err)
	}
}
