package kv

import (
	"context"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// cacheSeeded tells idx that worker w holds the full blocks of tokens,
// hashed with seed (a LoRA adapter's salt).
func cacheSeeded(t *testing.T, idx *indexer, w uint64, tokens []uint32, seed uint64) {
	t.Helper()
	local := kvblock.LocalHashesSeed(tokens, 4, seed)
	seq := kvblock.SeqHashes(local)
	var blocks []kvblock.StoredBlock
	for i := range local {
		blocks = append(blocks, kvblock.StoredBlock{BlockHash: seq[i], TokensHash: local[i]})
	}
	if err := idx.Apply(context.Background(), kvblock.RouterEvent{WorkerID: w, Event: kvblock.KVCacheEvent{Data: kvblock.Stored(nil, blocks...)}}); err != nil {
		t.Fatal(err)
	}
}

// A prompt's cached prefix counts only for the adapter (or the base
// model) that cached it: the router hashes an adapter's blocks with the
// adapter's salt, as the workers do in their KV events.
func TestRouterKeepsAdaptersPrefixesApart(t *testing.T) {
	idx := newIndexer(indexerOptions{})
	r, _ := newTestRouter(t, idx, &fakeTarget{workers: []uint64{1, 2, 3}})
	prompt := tokens(48, 3)
	cacheSeeded(t, idx, 1, prompt, kvblock.Seed)                          // the base model's blocks on worker 1
	cacheSeeded(t, idx, 2, prompt, kvblock.SaltedSeed("sql-adapter", "")) // the adapter's on worker 2
	for _, tc := range []struct {
		lora       string
		wantWorker uint64
	}{{"", 1}, {"sql-adapter", 2}, {"other-adapter", 0}} {
		req := &backend.Request{TokenIDs: prompt, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr(uint32(2))}}
		if tc.lora != "" {
			req.Routing = &backend.Routing{LoraName: &tc.lora}
		}
		rc := runtime.NewContext(context.Background(), "r-"+tc.lora)
		var got *backend.Placement
		if err := r.Generate(rc, req, func(out *backend.Output) error { got = out.Placement; return nil }); err != nil {
			t.Fatal(err)
		}
		rc.Release()
		switch {
		case tc.wantWorker == 0 && *got.OverlapBlocks != 0:
			t.Errorf("adapter %q: %d blocks matched another adapter's cache, want none", tc.lora, *got.OverlapBlocks)
		case tc.wantWorker != 0 && (got.WorkerID != tc.wantWorker || *got.OverlapBlocks != 12):
			t.Errorf("adapter %q: worker %d with %d blocks cached, want worker %d with 12", tc.lora, got.WorkerID, *got.OverlapBlocks, tc.wantWorker)
		}
	}
}
