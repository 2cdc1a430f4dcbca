package vllmapi

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"

	"github.com/dynamo-go/dynamo/pkg/mocker"
)

// bindAttempts bounds the tries to find free consecutive ports for the
// ranks' sockets (KVEventsConfig.Port 0 with several ranks).
const bindAttempts = 20

// publisher is the engine's event publisher in this mode: one
// rankPublisher per data-parallel rank, rank r's sockets on the
// configured ports + r, as vLLM's ZmqEventPublisher binds them
// (offset_endpoint_port). It implements mocker.KVBatchPublisher.
type publisher struct {
	cfg   KVEventsConfig
	ranks []*rankPublisher
	log   *slog.Logger
}

var _ mocker.KVBatchPublisher = (*publisher)(nil)

func newPublisher(cfg KVEventsConfig, blockSize, ranks int, log *slog.Logger) *publisher {
	p := &publisher{cfg: cfg, log: log}
	for r := range max(ranks, 1) {
		p.ranks = append(p.ranks, newRankPublisher(cfg, blockSize, log.With("dp_rank", r)))
	}
	return p
}

// listen binds every rank's sockets on host: rank r's PUB socket on
// Port+r and ROUTER socket on ReplayPort+r. A port of 0 picks free ports
// p, p+1, ... for the ranks (retrying when one of them is taken), so that
// a subscriber finds rank r on rank 0's port + r; with both ports 0 the
// replay ports follow the publishing ones (p+ranks, ...).
func (p *publisher) listen(ctx context.Context, host string) error {
	var err error
	for range bindAttempts {
		pub, replay := p.cfg.Port, p.cfg.ReplayPort
		if pub == 0 {
			if pub, err = freePort(host); err != nil {
				return err
			}
		}
		switch {
		case replay == 0 && p.cfg.Port == 0:
			// The ranks' replay ports right after their publishing ones
			// (two free ports picked apart could overlap a rank's).
			replay = pub + len(p.ranks)
		case replay == 0:
			if replay, err = freePort(host); err != nil {
				return err
			}
		}
		if err = p.bind(ctx, host, pub, replay); err == nil {
			return nil
		}
		if p.cfg.Port != 0 && p.cfg.ReplayPort != 0 {
			return err // fixed ports: no other choice
		}
	}
	return err
}

// bind binds the ranks' sockets from the base ports on, or none of them.
func (p *publisher) bind(ctx context.Context, host string, pub, replay int) error {
	for r, rp := range p.ranks {
		rr := -1
		if replay >= 0 {
			rr = replay + r
		}
		if err := rp.listen(ctx, host, pub+r, rr); err != nil {
			for _, done := range p.ranks[:r] {
				done.close()
			}
			return fmt.Errorf("rank %d: %w", r, err)
		}
	}
	return nil
}

// freePort returns a port that was free on host a moment ago.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("vllmapi: kv events: find a free port: %w", err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return strconv.Atoi(port)
}

// PublishKVBatch queues one pass's events on the rank's publisher.
func (p *publisher) PublishKVBatch(ctx context.Context, dpRank int, events []mocker.KVEvent) error {
	if dpRank < 0 || dpRank >= len(p.ranks) {
		return fmt.Errorf("vllmapi: kv events of dp rank %d: the server publishes ranks 0..%d", dpRank, len(p.ranks)-1)
	}
	return p.ranks[dpRank].publishBatch(ctx, dpRank, events)
}

// PublishKVEvent is not used: the engine sends batches (PublishKVBatch).
func (p *publisher) PublishKVEvent(context.Context, int, any) error { return nil }

// PublishLoad ignores load metrics: /metrics reads the engine directly.
func (p *publisher) PublishLoad(context.Context, int, any) error { return nil }

// run sends every rank's batches and answers its replay requests until
// ctx ends (the publish loops) and the sockets are closed (the replay
// loops).
func (p *publisher) run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, rp := range p.ranks {
		wg.Go(func() { rp.publishLoop(ctx) })
		if rp.router != nil {
			wg.Go(rp.replayLoop)
		}
	}
	wg.Wait()
}

// close closes every rank's sockets.
func (p *publisher) close() {
	for _, rp := range p.ranks {
		rp.close()
	}
}

// pubAddr and replayAddr are rank 0's bound addresses ("" without).
func (p *publisher) pubAddr() string    { return addr(p.ranks[0].pub) }
func (p *publisher) replayAddr() string { return addr(p.ranks[0].router) }
