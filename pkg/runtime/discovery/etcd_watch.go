package discovery

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Watch lists prefix at revision R, sends the EventResync, then reports
// the changes from R+1 on; see Store. If the etcd watch breaks (compaction,
// lost leader, cancellation by the server), it lists again, sends a new
// EventResync and watches from there, until ctx ends or the store stops.
func (e *Etcd) Watch(ctx context.Context, prefix string) (<-chan Event, error) {
	if err := e.check("watch"); err != nil {
		return nil, err
	}
	kvs, rev, err := e.list(ctx, prefix)
	if err != nil {
		return nil, err
	}
	out := make(chan Event)
	err = e.goWatch(ctx, func(ctx context.Context) {
		defer close(out)
		e.watch(ctx, prefix, kvs, rev, out)
	})
	if err != nil {
		return nil, fmt.Errorf("%w: watch", err)
	}
	return out, nil
}

// watch is the loop of one Watch, starting from a list at rev.
func (e *Etcd) watch(ctx context.Context, prefix string, kvs []KeyValue, rev int64, out chan<- Event) {
	delay := 100 * time.Millisecond
	for {
		if !send(ctx, out, resync(kvs)) {
			return
		}
		started := time.Now()
		err := e.follow(ctx, prefix, rev, out)
		if ctx.Err() != nil {
			return
		}
		e.log.Warn("discovery: etcd watch broke; listing again", "prefix", prefix, "err", err)
		if time.Since(started) > time.Minute {
			delay = 100 * time.Millisecond
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
			delay = min(2*delay, maxRetryDelay)
			kvs, rev, err = e.list(ctx, prefix)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			e.log.Warn("discovery: etcd watch: list", "prefix", prefix, "err", err)
		}
	}
}

// follow sends the events under prefix from rev+1 on, until the etcd watch
// ends. It returns why it ended.
func (e *Etcd) follow(ctx context.Context, prefix string, rev int64, out chan<- Event) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wch := e.cli.Watch(clientv3.WithRequireLeader(ctx), prefix,
		clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	for resp := range wch {
		if err := resp.Err(); err != nil {
			return err
		}
		for _, ev := range resp.Events {
			change := Event{Type: EventPut, Key: string(ev.Kv.Key), Value: ev.Kv.Value}
			if ev.Type == clientv3.EventTypeDelete {
				change = Event{Type: EventDelete, Key: string(ev.Kv.Key)}
			}
			if !send(ctx, out, change) {
				return ctx.Err()
			}
		}
	}
	return errors.New("watch channel closed")
}
