package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/bridge"
	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/dynamo-go/dynamo/pkg/mocker"
	"github.com/dynamo-go/dynamo/pkg/mocker/vllmapi"
)

// loads keeps the load events a bridge publishes.
type loads struct {
	mu   sync.Mutex
	last *kvblock.LoadEvent
}

func (l *loads) PublishKVEvent(context.Context, int, any) error { return nil }

func (l *loads) PublishLoad(_ context.Context, _ int, m any) error {
	ev := m.(kvblock.LoadEvent)
	l.mu.Lock()
	l.last = &ev
	l.mu.Unlock()
	return nil
}

func (l *loads) latest() *kvblock.LoadEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// The bridge reads the mocker's vLLM API server's real /metrics (its
// engine label and cache_config_info's num_gpu_blocks) into the load the
// KV router gets: an idle engine with 64 blocks.
func TestBridgeReadsTheMockerVLLMServersLoad(t *testing.T) {
	mc := mocker.DefaultConfig()
	mc.BlockSize, mc.NumGPUBlocks, mc.ContextLength = 4, 64, 256
	mc.Deterministic = true
	eng, err := mocker.New(mc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := vllmapi.New(vllmapi.Config{Host: "127.0.0.1", Model: "mock-model", ContextLength: 256, BlockSize: 4, NumGPUBlocks: 64,
		EOSTokenIDs: []uint32{2}, KVEvents: vllmapi.KVEventsConfig{Port: -1, ReplayPort: -1}}, eng)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("vllmapi Run: %v", err)
		}
	})
	b, err := bridge.New(bridge.Config{Dialect: bridge.DialectVLLM, URL: "http://" + s.HTTPAddr(), StartTimeout: 10 * time.Second,
		KVBlockSize: 4, LoadInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rec := &loads{}
	b.SetEventPublisher(rec)
	t.Cleanup(func() { _ = b.Cleanup(context.Background()) })
	if _, err := b.Start(t.Context(), 7); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "a load", func() bool { return rec.latest() != nil })
	got := rec.latest()
	if got.WorkerID != 7 || got.Data.KVStats.KVTotalBlocks != 64 || got.Data.KVStats.KVActiveBlocks != 0 ||
		got.Data.WorkerStats.RequestActiveSlots != 0 || got.Data.WorkerStats.NumRequestsWaiting != 0 {
		t.Errorf("idle mocker's load %+v", got)
	}
}
