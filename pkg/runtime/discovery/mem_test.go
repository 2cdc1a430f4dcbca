package discovery_test

import (
	"fmt"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
	"github.com/google/go-cmp/cmp"
)

// TestMemSlowConsumer checks that a watcher that does not read loses no
// event and does not block writers.
func TestMemSlowConsumer(t *testing.T) {
	space := discovery.NewMemSpace()
	s := space.NewStore()
	defer s.Close()
	ctx := t.Context()
	ch, err := s.Watch(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	const n = 5000
	for i := range n {
		if err := s.Put(ctx, "k", fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if ev := nextEvent(t, ch); ev.Type != discovery.EventResync {
		t.Fatalf("first event %v, want EventResync", ev.Type)
	}
	for i := range n {
		want := discovery.Event{Type: discovery.EventPut, Key: "k", Value: fmt.Appendf(nil, "%d", i)}
		if diff := cmp.Diff(want, nextEvent(t, ch)); diff != "" {
			t.Fatalf("event %d (-want +got):\n%s", i, diff)
		}
	}
}

// TestMemCloseKeepsOverwrittenKeys checks that Close deletes only the keys
// the store wrote last.
func TestMemCloseKeepsOverwrittenKeys(t *testing.T) {
	space := discovery.NewMemSpace()
	s1, s2 := space.NewStore(), space.NewStore()
	defer s2.Close()
	ctx := t.Context()
	for _, kv := range []struct {
		s   *discovery.Mem
		key string
	}{{s1, "a"}, {s1, "b"}, {s2, "b"}} {
		if err := kv.s.Put(ctx, kv.key, []byte(kv.key)); err != nil {
			t.Fatal(err)
		}
	}
	s1.Close()
	got, err := s2.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(kvs("b", "b"), got); diff != "" {
		t.Errorf("List after Close (-want +got):\n%s", diff)
	}
}
