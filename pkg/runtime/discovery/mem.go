package discovery

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// MemSpace is an in-process key space shared by several Mem stores, for
// tests and single-process deployments (the "mem" discovery back-end). The
// zero value is not usable; call NewMemSpace.
type MemSpace struct {
	mu       sync.Mutex
	entries  map[string]memEntry
	watchers map[*memWatcher]struct{}
}

// memEntry is one key of a MemSpace and the store that wrote it last.
type memEntry struct {
	value []byte
	owner *Mem
}

// memWatcher is one Watch on a MemSpace.
type memWatcher struct {
	prefix string
	q      *queue
}

// NewMemSpace returns an empty key space.
func NewMemSpace() *MemSpace {
	return &MemSpace{
		entries:  make(map[string]memEntry),
		watchers: make(map[*memWatcher]struct{}),
	}
}

// NewStore returns a store over s with its own random instance id. Its keys
// live until it is closed or they are deleted; there is no TTL.
func (s *MemSpace) NewStore() *Mem {
	return &Mem{space: s, id: randomID(), life: newLife()}
}

// set writes key under s.mu and tells the watchers.
func (s *MemSpace) set(key string, value []byte, owner *Mem) {
	s.entries[key] = memEntry{value: value, owner: owner}
	s.broadcast(Event{Type: EventPut, Key: key, Value: value})
}

// remove deletes key under s.mu and tells the watchers.
func (s *MemSpace) remove(key string) {
	if _, ok := s.entries[key]; !ok {
		return
	}
	delete(s.entries, key)
	s.broadcast(Event{Type: EventDelete, Key: key})
}

// broadcast queues ev for every watcher of its key. s.mu must be held, which
// keeps every watcher's events in the order of the writes.
func (s *MemSpace) broadcast(ev Event) {
	for w := range s.watchers {
		if strings.HasPrefix(ev.Key, w.prefix) {
			w.q.push(ev)
		}
	}
}

// list returns the entries under prefix, sorted. s.mu must be held.
func (s *MemSpace) list(prefix string) []KeyValue {
	kvs := []KeyValue{}
	for k, e := range s.entries {
		if strings.HasPrefix(k, prefix) {
			kvs = append(kvs, KeyValue{Key: k, Value: e.value})
		}
	}
	sortKVs(kvs)
	return kvs
}

// Mem is a Store over a MemSpace. Create it with MemSpace.NewStore.
type Mem struct {
	space *MemSpace
	id    uint64
	*life
}

var _ Store = (*Mem)(nil)

// Done is closed when the store is closed.
func (m *Mem) Done() <-chan struct{} { return m.life.Done() }

// Err returns ErrLeaseLost or ErrClosed once Done is closed, nil before.
func (m *Mem) Err() error { return m.life.Err() }

// ID returns the store's random non-zero instance id.
func (m *Mem) ID() uint64 { return m.id }

// Create writes key=value if key is absent; see Store.
func (m *Mem) Create(ctx context.Context, key string, value []byte) error {
	if err := m.ready(ctx, "create"); err != nil {
		return err
	}
	if err := checkValue(key, value); err != nil {
		return err
	}
	s := m.space
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.entries[key]; ok {
		if bytes.Equal(e.value, value) {
			return nil
		}
		return fmt.Errorf("%w: %q", ErrExists, key)
	}
	s.set(key, bytes.Clone(value), m)
	return nil
}

// Put writes key=value; see Store.
func (m *Mem) Put(ctx context.Context, key string, value []byte) error {
	if err := m.ready(ctx, "put"); err != nil {
		return err
	}
	if err := checkValue(key, value); err != nil {
		return err
	}
	s := m.space
	s.mu.Lock()
	defer s.mu.Unlock()
	s.set(key, bytes.Clone(value), m)
	return nil
}

// Delete removes key; see Store.
func (m *Mem) Delete(ctx context.Context, key string) error {
	if err := m.ready(ctx, "delete"); err != nil {
		return err
	}
	s := m.space
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remove(key)
	return nil
}

// List returns the entries under prefix, sorted by key.
func (m *Mem) List(ctx context.Context, prefix string) ([]KeyValue, error) {
	if err := m.ready(ctx, "list"); err != nil {
		return nil, err
	}
	s := m.space
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.list(prefix), nil
}

// Watch reports changes under prefix; see Store. Events are queued without
// bound for each watcher, so writers never wait for a slow consumer.
func (m *Mem) Watch(ctx context.Context, prefix string) (<-chan Event, error) {
	if err := m.ready(ctx, "watch"); err != nil {
		return nil, err
	}
	s := m.space
	w := &memWatcher{prefix: prefix, q: newQueue()}
	out := make(chan Event)
	s.mu.Lock()
	w.q.push(resync(s.list(prefix)))
	s.watchers[w] = struct{}{}
	s.mu.Unlock()
	err := m.goWatch(ctx, func(ctx context.Context) {
		defer close(out)
		defer func() {
			s.mu.Lock()
			delete(s.watchers, w)
			s.mu.Unlock()
		}()
		w.q.drain(ctx, out)
	})
	if err != nil {
		s.mu.Lock()
		delete(s.watchers, w)
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: watch", err)
	}
	return out, nil
}

// Run blocks until ctx ends or the store is closed, and returns nil: a mem
// store has no liveness to keep.
func (m *Mem) Run(ctx context.Context) error {
	select {
	case <-ctx.Done():
	case <-m.Done():
	}
	return nil
}

// Close deletes the keys this store wrote last, at once, and ends its
// watches. It is idempotent.
func (m *Mem) Close() error {
	if !m.stop() {
		return nil
	}
	s := m.space
	s.mu.Lock()
	var owned []string
	for k, e := range s.entries {
		if e.owner == m {
			owned = append(owned, k)
		}
	}
	slices.Sort(owned)
	for _, k := range owned {
		s.remove(k)
	}
	s.mu.Unlock()
	m.wait()
	return nil
}

// ready returns why an operation cannot start: ctx ended or the store is
// closed.
func (m *Mem) ready(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("discovery: %s: %w", op, err)
	}
	return m.check(op)
}
