package discovery

import (
	"bytes"
	"context"
	"slices"
	"strings"
)

// snapshot is the set of live keys under a watched prefix, as seen at one
// moment. The file store diffs successive snapshots into events.
type snapshot map[string][]byte

// sorted returns the entries of s sorted by key.
func (s snapshot) sorted() []KeyValue {
	kvs := make([]KeyValue, 0, len(s))
	for k, v := range s {
		kvs = append(kvs, KeyValue{Key: k, Value: v})
	}
	sortKVs(kvs)
	return kvs
}

// diff returns the events that turn s into next, sorted by key: EventPut for
// keys that are new or hold a new value, EventDelete for keys that are gone.
func (s snapshot) diff(next snapshot) []Event {
	var evs []Event
	for k, v := range next {
		if old, ok := s[k]; !ok || !bytes.Equal(old, v) {
			evs = append(evs, Event{Type: EventPut, Key: k, Value: v})
		}
	}
	for k := range s {
		if _, ok := next[k]; !ok {
			evs = append(evs, Event{Type: EventDelete, Key: k})
		}
	}
	slices.SortFunc(evs, func(a, b Event) int { return strings.Compare(a.Key, b.Key) })
	return evs
}

// sortKVs sorts kvs by key.
func sortKVs(kvs []KeyValue) {
	slices.SortFunc(kvs, func(a, b KeyValue) int { return strings.Compare(a.Key, b.Key) })
}

// resync returns the EventResync carrying kvs.
func resync(kvs []KeyValue) Event {
	if kvs == nil {
		kvs = []KeyValue{}
	}
	return Event{Type: EventResync, Snapshot: kvs}
}

// send delivers ev on out, or gives up when ctx ends. It reports whether ev
// was delivered.
func send(ctx context.Context, out chan<- Event, ev Event) bool {
	select {
	case out <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}
