package discovery

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

// TestEtcdWatchResyncsAfterCompaction starts a watch loop at a revision
// that etcd has compacted away: the etcd watch fails, and the loop must
// list again and send a fresh EventResync.
func TestEtcdWatchResyncsAfterCompaction(t *testing.T) {
	srv := testenv.StartEtcd(t)
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	e, err := NewEtcd(ctx, EtcdConfig{Endpoints: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const p = "compact/"
	stale, rev, err := e.list(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if err := e.Put(ctx, p+k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := e.cli.Get(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.cli.Compact(ctx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}

	out := make(chan Event)
	wctx, wcancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		(&etcdWatch{e: e, prefix: p, out: out, known: map[string][]byte{}, held: map[string]bool{}}).run(wctx, stale, rev)
	}()
	defer func() { wcancel(); <-done }()

	want := []Event{
		{Type: EventResync, Snapshot: []KeyValue{}},
		{Type: EventResync, Snapshot: []KeyValue{{Key: p + "a", Value: []byte("a")}, {Key: p + "b", Value: []byte("b")}}},
	}
	for i, w := range want {
		select {
		case ev := <-out:
			if diff := cmp.Diff(w, ev); diff != "" {
				t.Fatalf("event %d (-want +got):\n%s", i, diff)
			}
		case <-ctx.Done():
			t.Fatalf("event %d: %v", i, ctx.Err())
		}
	}
	// And it watches again from the new list.
	if err := e.Put(ctx, p+"c", []byte("c")); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-out:
		if diff := cmp.Diff(Event{Type: EventPut, Key: p + "c", Value: []byte("c")}, ev); diff != "" {
			t.Fatalf("event after resync (-want +got):\n%s", diff)
		}
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
}

// TestEtcdWatchHoldsDeletionsThroughAnOutage: while this process cannot
// reach etcd, and for the hold time after, deletions are held back. A key
// whose owner writes it again (its lease expired during the outage) is
// never reported deleted; a key whose owner is gone is reported deleted
// once the hold time has passed.
func TestEtcdWatchHoldsDeletionsThroughAnOutage(t *testing.T) {
	srv := testenv.StartEtcd(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	open := func() *Etcd {
		e, err := NewEtcd(ctx, EtcdConfig{Endpoints: []string{srv.URL}, TTL: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		rctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = e.Run(rctx) }()
		t.Cleanup(func() { stop(); <-done; e.Close() })
		return e
	}
	watcher, alive, dead := open(), open(), open()
	watcher.holdFor = time.Second
	const p = "hold/"
	for _, s := range []*Etcd{alive, dead} {
		if err := s.Put(ctx, p+s.leaseHex(), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	aliveKey, deadKey := p+alive.leaseHex(), p+dead.leaseHex()
	events, err := watcher.Watch(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-events; ev.Type != EventResync || len(ev.Snapshot) != 2 {
		t.Fatalf("first event %+v, want a snapshot of both keys", ev)
	}

	// The watcher loses etcd; meanwhile both other leases expire (revoked
	// here): the live owner takes a new lease and writes its key again.
	watcher.link.down(errors.New("test: cut off"))
	raw, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.URL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	dead.Orphan()
	for _, id := range []uint64{alive.ID(), dead.ID()} {
		if _, err := raw.Revoke(ctx, clientv3.LeaseID(id)); err != nil {
			t.Fatal(err)
		}
	}
	var got []Event
	collect := func(d time.Duration) {
		deadline := time.After(d)
		for {
			select {
			case ev := <-events:
				got = append(got, ev)
			case <-deadline:
				return
			}
		}
	}
	collect(3 * time.Second) // the live owner re-writes its key meanwhile
	for _, ev := range got {
		if ev.Type == EventDelete {
			t.Fatalf("deletion %q reported while the watcher was cut off from etcd", ev.Key)
		}
	}
	watcher.link.up()
	collect(2500 * time.Millisecond)
	var deleted []string
	for _, ev := range got {
		if ev.Type == EventDelete {
			deleted = append(deleted, ev.Key)
		}
	}
	if len(deleted) != 1 || deleted[0] != deadKey {
		t.Errorf("deleted %v, want only the dead owner's key %s (the live owner's %s came back)", deleted, deadKey, aliveKey)
	}
}
