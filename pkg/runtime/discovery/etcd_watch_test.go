package discovery

import (
	"context"
	"testing"
	"time"

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
		e.watch(wctx, p, stale, rev, out)
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
