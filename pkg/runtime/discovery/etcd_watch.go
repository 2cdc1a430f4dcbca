package discovery

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// holdCheck is how often a watch looks whether held deletions are due.
const holdCheck = 500 * time.Millisecond

// Watch lists prefix at revision R, sends the EventResync, then reports
// the changes from R+1 on; see Store. If the etcd watch breaks (etcd
// unreachable, compaction, lost leader, cancellation by the server), it
// lists again, sends a new EventResync and watches from there, until ctx
// ends or the store stops.
//
// Deletions are held back while etcd is unreachable from this process and
// for a while after it returns (the lease TTL, at least 5 s): a key that
// vanished then (its lease expired because its owner could not reach etcd
// either) stays in the snapshot, and is reported deleted only if its owner
// has not written it again by the end of that time. So an outage does not
// make consumers drop live workers, while a worker that died during the
// outage is still dropped after it.
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
		w := &etcdWatch{e: e, prefix: prefix, out: out, known: map[string][]byte{}, held: map[string]bool{}}
		w.run(ctx, kvs, rev)
	})
	if err != nil {
		return nil, fmt.Errorf("%w: watch", err)
	}
	return out, nil
}

// etcdWatch is the state of one Watch: what its consumer has been told.
type etcdWatch struct {
	e      *Etcd
	prefix string
	out    chan<- Event
	known  map[string][]byte // the keys as the consumer sees them
	held   map[string]bool   // known keys gone from etcd, deletion held back
}

// run is the loop of one Watch, starting from a list at rev.
func (w *etcdWatch) run(ctx context.Context, kvs []KeyValue, rev int64) {
	e := w.e
	delay := 100 * time.Millisecond
	for {
		if !send(ctx, w.out, w.resync(kvs)) {
			return
		}
		started := time.Now()
		err := w.follow(ctx, rev)
		if ctx.Err() != nil {
			return
		}
		if e.link.get().Connected {
			e.log.Warn("discovery: etcd watch broke; listing again", "prefix", w.prefix, "err", err)
		} else {
			e.log.Debug("discovery: etcd watch broke; listing again", "prefix", w.prefix, "err", err)
		}
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
			kvs, rev, err = e.list(ctx, w.prefix)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			e.log.Debug("discovery: etcd watch: list", "prefix", w.prefix, "err", err)
		}
	}
}

// resync makes the snapshot to send after a list: the listed keys, plus
// the known keys missing from the list whose deletion is held back.
func (w *etcdWatch) resync(kvs []KeyValue) Event {
	listed := make(map[string][]byte, len(kvs))
	for _, kv := range kvs {
		listed[kv.Key] = kv.Value
	}
	hold := w.e.link.settling(w.e.holdFor)
	for key, value := range w.known {
		if _, ok := listed[key]; ok {
			delete(w.held, key)
			continue
		}
		if hold || w.held[key] {
			w.held[key] = true
			kvs = append(kvs, KeyValue{Key: key, Value: value})
		}
	}
	slices.SortFunc(kvs, func(a, b KeyValue) int { return strings.Compare(a.Key, b.Key) })
	clear(w.known)
	for _, kv := range kvs {
		w.known[kv.Key] = kv.Value
	}
	return resync(kvs)
}

// follow sends the events under the prefix from rev+1 on, until the etcd
// watch ends, and the held deletions when they are due. It returns why it
// ended.
func (w *etcdWatch) follow(ctx context.Context, rev int64) error {
	e := w.e
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wch := e.cli.Watch(clientv3.WithRequireLeader(ctx), w.prefix,
		clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	tick := time.NewTicker(holdCheck)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if !w.release(ctx) {
				return ctx.Err()
			}
		case resp, ok := <-wch:
			if !ok {
				return errors.New("watch channel closed")
			}
			if err := resp.Err(); err != nil {
				return err
			}
			for _, ev := range resp.Events {
				key := string(ev.Kv.Key)
				change := Event{Type: EventPut, Key: key, Value: ev.Kv.Value}
				if ev.Type == clientv3.EventTypeDelete {
					if e.link.settling(e.holdFor) {
						if _, ok := w.known[key]; ok {
							w.held[key] = true
						}
						continue
					}
					change = Event{Type: EventDelete, Key: key}
					delete(w.known, key)
				} else {
					w.known[key] = ev.Kv.Value
				}
				delete(w.held, key)
				if !send(ctx, w.out, change) {
					return ctx.Err()
				}
			}
		}
	}
}

// release reports the held deletions once etcd has been back for the hold
// time. It returns false if ctx ended.
func (w *etcdWatch) release(ctx context.Context) bool {
	if len(w.held) == 0 || w.e.link.settling(w.e.holdFor) {
		return true
	}
	for _, key := range slices.Sorted(maps.Keys(w.held)) {
		delete(w.held, key)
		delete(w.known, key)
		w.e.log.Info("discovery: etcd: key did not come back after the outage; reporting it deleted", "key", key)
		if !send(ctx, w.out, Event{Type: EventDelete, Key: key}) {
			return false
		}
	}
	return true
}
