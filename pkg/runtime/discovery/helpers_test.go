package discovery_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
)

// waitLong bounds every wait for something that should happen soon; tests
// pass long before it on a healthy machine.
const waitLong = 15 * time.Second

// running is a Store's Run in a test goroutine.
type running struct {
	done chan struct{} // closed when Run returned
	err  error         // what Run returned; read after done
}

// runStore runs s.Run in a goroutine; when the test ends it cancels Run,
// closes s and waits for Run to return.
func runStore(t *testing.T, s discovery.Store) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = s.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		select {
		case <-r.done:
		case <-time.After(waitLong):
			t.Errorf("Run did not return after Close")
		}
	})
	return r
}

// wait returns Run's result, failing the test if Run does not return in
// time.
func (r *running) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-r.done:
		return r.err
	case <-time.After(waitLong):
		t.Fatal("Run did not return in time")
	}
	return nil
}

// nextEvent returns the next event of ch, failing the test if ch is closed
// or nothing arrives in time.
func nextEvent(t *testing.T, ch <-chan discovery.Event) discovery.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return ev
	case <-time.After(waitLong):
		t.Fatal("no watch event in time")
	}
	panic("unreachable")
}

// view is what a watch consumer knows: the keys under the prefix.
type view map[string]string

// apply updates v with ev, replacing it on EventResync.
func (v view) apply(ev discovery.Event) {
	switch ev.Type {
	case discovery.EventResync:
		clear(v)
		for _, kv := range ev.Snapshot {
			v[kv.Key] = string(kv.Value)
		}
	case discovery.EventPut:
		v[ev.Key] = string(ev.Value)
	case discovery.EventDelete:
		delete(v, ev.Key)
	}
}

// waitView applies the events of ch to v until v equals want, within d.
func waitView(t *testing.T, ch <-chan discovery.Event, v view, want view, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for !maps.Equal(v, want) {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("watch channel closed; view %v, want %v", v, want)
			}
			v.apply(ev)
		case <-deadline:
			t.Fatalf("view %v, want %v after %v", v, want, d)
		}
	}
}

// waitClosed fails the test unless ch is closed (after any events) in time.
func waitClosed(t *testing.T, ch <-chan discovery.Event) {
	t.Helper()
	deadline := time.After(waitLong)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("watch channel not closed in time")
		}
	}
}

// kvs builds a sorted []KeyValue from key, value pairs.
func kvs(pairs ...string) []discovery.KeyValue {
	out := []discovery.KeyValue{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, discovery.KeyValue{Key: pairs[i], Value: []byte(pairs[i+1])})
	}
	return out
}
