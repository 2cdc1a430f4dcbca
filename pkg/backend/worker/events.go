package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/dynamo-go/dynamo/pkg/kvblock"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// eventPublisher publishes an engine's events on the runtime's event
// plane. Without one (no NATS), events are dropped and that is logged once.
type eventPublisher struct {
	rt        *runtime.DistributedRuntime
	kvSubject string
	loadSubj  string
	log       *slog.Logger
	warnOnce  sync.Once
	local     map[int]*kvblock.LocalIndex // per dp rank, for KV event sources
	dropKV    bool                        // a decode worker: KV events are not published
}

func newEventPublisher(rt *runtime.DistributedRuntime, ep runtime.EndpointID, log *slog.Logger) *eventPublisher {
	return &eventPublisher{
		rt:        rt,
		kvSubject: kvblock.KVEventsSubject(ep.Namespace, ep.Component),
		loadSubj:  kvblock.LoadMetricsSubject(ep.Namespace),
		log:       log,
	}
}

func (p *eventPublisher) PublishKVEvent(ctx context.Context, dpRank int, event any) error {
	if p.dropKV {
		return nil
	}
	if x := p.local[dpRank]; x != nil {
		var ev *kvblock.RouterEvent
		switch e := event.(type) {
		case kvblock.RouterEvent:
			ev = &e
		case *kvblock.RouterEvent:
			ev = e
		}
		if ev != nil {
			if err := x.Apply(ev.Event); err != nil {
				p.log.Warn("worker: kv event out of order in the local index", "dp_rank", dpRank, "err", err)
			}
		}
	}
	return p.publish(ctx, p.kvSubject, event)
}

func (p *eventPublisher) PublishLoad(ctx context.Context, _ int, metrics any) error {
	return p.publish(ctx, p.loadSubj, metrics)
}

// PublishesLoad reports whether loads published go anywhere: without an
// event plane they are dropped, and an engine need not read them.
func (p *eventPublisher) PublishesLoad() bool { return p.rt.HasEventPlane() }

func (p *eventPublisher) publish(ctx context.Context, subject string, v any) error {
	if !p.rt.HasEventPlane() {
		p.noEventPlane()
		return nil // not encoded: it would go nowhere
	}
	b, err := kvblock.Marshal(v)
	if err != nil {
		return fmt.Errorf("worker: encode event: %w", err)
	}
	err = p.rt.Publish(ctx, subject, b)
	if errors.Is(err, runtime.ErrNoEventPlane) {
		p.noEventPlane()
		return nil
	}
	return err
}

func (p *eventPublisher) noEventPlane() {
	p.warnOnce.Do(func() {
		p.log.Warn("worker: no event plane; KV events and load metrics are not published (use --request-plane nats)")
	})
}
