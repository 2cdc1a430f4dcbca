package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/dynamo-go/dynamo/pkg/kvevents"
)

// kvEventsConfig is where the engine publishes its KV events (ZeroMQ).
type kvEventsConfig struct {
	// Endpoint is rank 0's publisher, tcp://host:port; "" for none. Rank
	// r publishes on its port + r.
	Endpoint string
	// ReplayEndpoint is rank 0's replay (catch-up) socket; "" for none.
	// Rank r's is on its port + r.
	ReplayEndpoint string
	// Topic filters the publishers' messages ("" for all).
	Topic string
	// Ranks is the engine's data-parallel size: one subscriber per rank.
	Ranks int
}

// kvEvents returns the flags' KV-event configuration.
func (f *engineFlags) kvEvents() kvEventsConfig {
	return kvEventsConfig{Endpoint: *f.kvEndpoint, ReplayEndpoint: *f.kvReplay, Topic: *f.kvTopic, Ranks: *f.dpSize}
}

// newKVEventSource returns the bridge's Config.KVEvents for the
// --kv-events-* flags: one ZeroMQ subscriber of the engine's KV events
// (pkg/kvevents) per data-parallel rank, rank r on the endpoints' ports + r
// with r as the rank of batches that carry none (SGLang's), or nil when no
// endpoint is given. The events' token ids are cut into blocks of
// --kv-block-size, which it therefore needs.
func newKVEventSource(cfg kvEventsConfig, blockSize int, reg prometheus.Registerer, log *slog.Logger) (func(ctx context.Context, emit func(rank int, ev kvblock.KVCacheEvent)) error, error) {
	if cfg.Endpoint == "" {
		if cfg.ReplayEndpoint != "" {
			return nil, errors.New("--kv-events-replay-endpoint needs --kv-events-endpoint")
		}
		return nil, nil
	}
	if blockSize <= 0 {
		return nil, fmt.Errorf("--kv-events-endpoint %q needs --kv-block-size (the engine's block size: vLLM --block-size, SGLang --page-size)", cfg.Endpoint)
	}
	met, err := kvevents.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	var subs []*kvevents.Subscriber
	for r := range max(cfg.Ranks, 1) {
		ep, err := kvevents.RankEndpoint(cfg.Endpoint, r)
		if err != nil {
			return nil, fmt.Errorf("--kv-events-endpoint with --data-parallel-size %d: %w", cfg.Ranks, err)
		}
		replay, err := kvevents.RankEndpoint(cfg.ReplayEndpoint, r)
		if err != nil {
			return nil, fmt.Errorf("--kv-events-replay-endpoint with --data-parallel-size %d: %w", cfg.Ranks, err)
		}
		sub, err := kvevents.New(kvevents.Config{Endpoint: ep, ReplayEndpoint: replay, Topic: cfg.Topic,
			BlockSize: blockSize, DefaultDPRank: r, Logger: log.With("dp_rank", r), Metrics: met})
		if err != nil {
			return nil, fmt.Errorf("--kv-events-endpoint: %w", err)
		}
		subs = append(subs, sub)
	}
	if len(subs) == 1 {
		return subs[0].Run, nil
	}
	return func(ctx context.Context, emit func(rank int, ev kvblock.KVCacheEvent)) error {
		// The subscribers' emits are serialised: the bridge's emit
		// publishes in order.
		var mu sync.Mutex
		locked := func(rank int, ev kvblock.KVCacheEvent) {
			mu.Lock()
			defer mu.Unlock()
			emit(rank, ev)
		}
		errs := make([]error, len(subs))
		var wg sync.WaitGroup
		for i, sub := range subs {
			wg.Go(func() { errs[i] = sub.Run(ctx, locked) })
		}
		wg.Wait()
		return errors.Join(errs...)
	}, nil
}
