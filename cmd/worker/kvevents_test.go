package main

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/bridge"
	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/dynamo-go/dynamo/pkg/mocker"
	"github.com/dynamo-go/dynamo/pkg/mocker/vllmapi"
)

// events keeps the KV events a bridge publishes, per rank.
type events struct {
	mu     sync.Mutex
	stored map[int]int // stored events per dp rank
}

func (e *events) PublishKVEvent(_ context.Context, rank int, ev any) error {
	re := ev.(kvblock.RouterEvent)
	e.mu.Lock()
	defer e.mu.Unlock()
	if re.Event.Data.Stored != nil && int(re.Event.DPRank) == rank {
		e.stored[rank]++
	}
	return nil
}

func (e *events) PublishLoad(context.Context, int, any) error { return nil }

func (e *events) count(rank int) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stored[rank]
}

// An engine with two data-parallel ranks publishes each rank's KV events
// on its own port (rank 1 on the base port + 1, as vLLM does): the worker
// subscribes to both, and a request the router pinned to a rank (its dp
// rank, sent as vLLM's X-data-parallel-rank) shows up as that rank's
// stored blocks.
func TestKVEventsPerDataParallelRank(t *testing.T) {
	s := mockerVLLM(t, func(mc *mocker.Config, vc *vllmapi.Config) {
		mc.DPSize = 2
		vc.KVEvents = vllmapi.KVEventsConfig{Port: 0, ReplayPort: 0}
	})
	var log testenv.Buffer
	src, err := newKVEventSource(kvEventsConfig{Endpoint: "tcp://" + s.KVEventsAddr(), ReplayEndpoint: "tcp://" + s.ReplayAddr(), Ranks: 2},
		4, prometheus.NewRegistry(), slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	b, err := bridge.New(bridge.Config{Dialect: bridge.DialectVLLM, URL: "http://" + s.HTTPAddr(), StartTimeout: 10 * time.Second,
		KVBlockSize: 4, DataParallelSize: 2, KVEvents: src})
	if err != nil {
		t.Fatal(err)
	}
	rec := &events{stored: map[int]int{}}
	b.SetEventPublisher(rec)
	t.Cleanup(func() { _ = b.Cleanup(context.Background()) })
	if _, err := b.Start(t.Context(), 7); err != nil {
		t.Fatal(err)
	}
	if got := b.KVEventSources(); len(got) != 2 {
		t.Fatalf("KV event sources %v, want ranks 0 and 1", got)
	}
	// Both ranks' subscribers have dialled their publishers, their
	// subscription sent as they connect.
	testenv.WaitFor(t, 10*time.Second, "both ranks' subscribers to connect", func() bool {
		return strings.Count(log.String(), "kvevents: connected to the engine's event publisher") == 2
	})
	for _, rank := range []uint32{1, 0} {
		req := &backend.Request{TokenIDs: []uint32{11, 12, 13, 14, 15, 16, 17, 18, 19}, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr[uint32](2)},
			Routing: &backend.Routing{DPRank: backend.Ptr(rank)}}
		if err := b.Generate(t.Context(), req, func(*backend.Output) error { return nil }); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, 10*time.Second, "rank's stored blocks", func() bool { return rec.count(int(rank)) > 0 })
	}
	// Rank 1 got only the request pinned to it.
	if n := rec.count(1); n != 1 {
		t.Errorf("rank 1 stored %d batches of blocks, want 1", n)
	}

	if _, err := newKVEventSource(kvEventsConfig{Endpoint: "ipc:///tmp/kv", Ranks: 2}, 4, prometheus.NewRegistry(), slog.New(slog.DiscardHandler)); err == nil ||
		!strings.Contains(err.Error(), "tcp://host:port") {
		t.Errorf("an ipc endpoint with two ranks: %v, want an error", err)
	}
}
