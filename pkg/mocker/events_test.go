package mocker

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/kvblock"
)

func TestKVEventsPublished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, pub := startEngine(t, func(c *Config) { c.BlockSize, c.NumGPUBlocks, c.DPSize = 4, 4, 2 })
		defer stopEngine(t, e)
		p := prompt(0, 9) // two full blocks and a partial one
		req := request(p, 3, 0)
		req.Routing = &backend.Routing{DPRank: backend.Ptr(uint32(1))}
		var c collector
		if err := e.Generate(t.Context(), req, c.emit); err != nil {
			t.Fatal(err)
		}
		// The third block fills with the third generated token.
		whole := append(p, c.tokens()...)
		local := kvblock.LocalHashes(whole, 4)
		seq := kvblock.SeqHashes(local)
		// A second request with another prompt evicts the first one's blocks,
		// least recently used first: the generated block, then the prompt's
		// (released tail first). The cache holds 4 blocks.
		if err := e.Generate(t.Context(), func() *backend.Request {
			r := request(prompt(100, 12), 1, 0)
			r.Routing = req.Routing
			return r
		}(), (&collector{}).emit); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()

		events, ranks, loads := pub.snapshot()
		var got []kvblock.EventData
		for i, ev := range events {
			if ev.WorkerID != 42 || ev.Event.DPRank != 1 || ranks[i] != 1 || ev.Event.EventID != uint64(i) {
				t.Errorf("event %d: worker %d, dp_rank %d, rank %d, id %d", i, ev.WorkerID, ev.Event.DPRank, ranks[i], ev.Event.EventID)
			}
			got = append(got, ev.Event.Data)
		}
		local2 := kvblock.LocalHashes(prompt(100, 12), 4)
		seq2 := kvblock.SeqHashes(local2)
		want := []kvblock.EventData{
			kvblock.Stored(nil, kvblock.StoredBlock{BlockHash: seq[0], TokensHash: local[0]},
				kvblock.StoredBlock{BlockHash: seq[1], TokensHash: local[1]}),
			kvblock.Stored(&seq[1], kvblock.StoredBlock{BlockHash: seq[2], TokensHash: local[2]}),
			kvblock.Removed(seq[2]),
			kvblock.Removed(seq[1]),
			kvblock.Stored(nil, kvblock.StoredBlock{BlockHash: seq2[0], TokensHash: local2[0]},
				kvblock.StoredBlock{BlockHash: seq2[1], TokensHash: local2[1]},
				kvblock.StoredBlock{BlockHash: seq2[2], TokensHash: local2[2]}),
			kvblock.Removed(seq[0]), // for the partial block of the generated token
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		if len(loads) == 0 {
			t.Fatal("no load published")
		}
		last := loads[len(loads)-1]
		if last.WorkerID != 42 || *last.Data.WorkerStats.DataParallelRank != 1 ||
			last.Data.KVStats.KVTotalBlocks != 4 || last.Data.KVStats.KVActiveBlocks != 0 ||
			last.Data.WorkerStats.RequestTotalSlots != 1024 {
			t.Errorf("last load %+v", last)
		}
		if r := e.ranks[0]; r.kv.nextEventID != 0 {
			t.Errorf("rank 0 published %d events", r.kv.nextEventID)
		}
	})
}

func TestNoEventsWithoutPrefixCaching(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, pub := startEngine(t, func(c *Config) { c.EnablePrefixCaching = false; c.BlockSize = 4 })
		defer stopEngine(t, e)
		for range 2 {
			var c collector
			if err := e.Generate(t.Context(), request(prompt(0, 20), 10, 0), c.emit); err != nil {
				t.Fatal(err)
			}
			if cached := c.terminal(t).CompletionUsage.PromptTokensDetails.CachedTokens; cached != 0 {
				t.Errorf("cached %d tokens without prefix caching", cached)
			}
		}
		if events, _, _ := pub.snapshot(); len(events) != 0 {
			t.Errorf("%d events without prefix caching", len(events))
		}
		if e.ranks[0].kv.usedBlocks() != 0 {
			t.Errorf("%d blocks kept without prefix caching", e.ranks[0].kv.usedBlocks())
		}
	})
}

// batchPublisher records what an engine publishes as a KVBatchPublisher.
type batchPublisher struct {
	fakePublisher
	batches [][]KVEvent
}

func (p *batchPublisher) PublishKVBatch(_ context.Context, _ int, events []KVEvent) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.batches = append(p.batches, events)
	return nil
}

func TestKVBatchesCarryBlockTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := testEngine(t, func(c *Config) { c.BlockSize, c.NumGPUBlocks = 4, 16 })
		pub := &batchPublisher{}
		e.SetEventPublisher(pub)
		if _, err := e.Start(t.Context(), 42); err != nil {
			t.Fatal(err)
		}
		defer stopEngine(t, e)
		p := prompt(0, 6) // one full block; the second fills with the second generated token
		var c collector
		if err := e.Generate(t.Context(), request(p, 2, 0), c.emit); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		pub.mu.Lock()
		defer pub.mu.Unlock()
		whole := append(append([]uint32{}, p...), c.tokens()...)
		var got [][]uint32
		for _, b := range pub.batches {
			for _, ev := range b {
				if ev.WorkerID != 42 || ev.Event.Data.Stored == nil {
					t.Errorf("event %+v", ev)
				}
				got = append(got, ev.Tokens)
			}
		}
		if diff := cmp.Diff([][]uint32{whole[:4], whole[4:8]}, got); diff != "" {
			t.Errorf("stored tokens (-want +got):\n%s", diff)
		}
		if len(pub.events) != 0 {
			t.Errorf("%d events went to PublishKVEvent", len(pub.events))
		}
	})
}
