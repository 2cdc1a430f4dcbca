package pipeline

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
)

// LoraRegistrationPrefix is where frontends keep the adapters registered
// with POST /v1/loras and replicas > 0, which a request loads on demand
// when no live worker holds them: one key per adapter per frontend,
// LoraRegistrationPrefix{name}/{frontend instance:x}, bound to that
// frontend's lease. Every frontend that learns a registration writes its
// own copy, so it lives while any frontend does.
const LoraRegistrationPrefix = "v1/lora_registrations/"

// LoraRegistration is an adapter to keep loaded on replicas workers of
// its base model.
type LoraRegistration struct {
	Name      string `json:"lora_name"`
	BaseModel string `json:"base_model"`
	Source    string `json:"source"`
	Replicas  int    `json:"replicas"`
}

// loraRegistrations follows the registrations in discovery (run) and
// keeps this frontend's copy of each.
type loraRegistrations struct {
	store discovery.Store
	self  uint64
	log   *slog.Logger

	mu     sync.Mutex
	byName map[string]LoraRegistration
	// loading holds, per adapter being loaded on demand, the channel
	// closed when its load ends: one load at a time per adapter.
	loading map[string]chan struct{}
}

func newLoraRegistrations(store discovery.Store, log *slog.Logger) *loraRegistrations {
	return &loraRegistrations{store: store, self: store.ID(), log: log, byName: map[string]LoraRegistration{}, loading: map[string]chan struct{}{}}
}

func (l *loraRegistrations) key(name string) string {
	return LoraRegistrationPrefix + name + "/" + strconv.FormatUint(l.self, 16)
}

// run follows the registrations until ctx ends or the watch does.
func (l *loraRegistrations) run(ctx context.Context) {
	events, err := l.store.Watch(ctx, LoraRegistrationPrefix)
	if err != nil {
		l.log.Warn("pipeline: LoRA registrations are not followed; adapters are not loaded on demand", "err", err)
		return
	}
	// This frontend's copies are written beside the watch, which a
	// store may need to deliver them to.
	var copies sync.WaitGroup
	defer copies.Wait()
	learn := func(key string, value []byte) (string, bool) {
		name, copyIt, ok := l.learn(key, value)
		if copyIt {
			copies.Go(func() {
				if err := l.store.Put(ctx, l.key(name), value); err != nil && ctx.Err() == nil {
					l.log.Warn("pipeline: LoRA registration not copied", "lora_name", name, "err", err)
				}
			})
		}
		return name, ok
	}
	for ev := range events {
		switch ev.Type {
		case discovery.EventResync:
			seen := map[string]bool{}
			for _, kv := range ev.Snapshot {
				if name, ok := learn(kv.Key, kv.Value); ok {
					seen[name] = true
				}
			}
			l.mu.Lock()
			for name := range l.byName {
				if !seen[name] {
					delete(l.byName, name)
				}
			}
			l.mu.Unlock()
		case discovery.EventPut:
			learn(ev.Key, ev.Value)
		case discovery.EventDelete:
			// Our own copy gone: the adapter was deleted (DELETE
			// /v1/loras removes every copy).
			if name, self, ok := l.parseKey(ev.Key); ok && self {
				l.mu.Lock()
				delete(l.byName, name)
				l.mu.Unlock()
			}
		}
	}
}

// learn takes one copy of a registration; copyIt says it is new to this
// frontend, which then writes its own copy.
func (l *loraRegistrations) learn(key string, value []byte) (name string, copyIt, ok bool) {
	name, _, ok = l.parseKey(key)
	var reg LoraRegistration
	if !ok || json.Unmarshal(value, &reg) != nil || reg.Name != name {
		return "", false, false
	}
	l.mu.Lock()
	_, known := l.byName[name]
	l.byName[name] = reg
	l.mu.Unlock()
	return name, !known, true
}

// parseKey reads prefix{name}/{instance:x}.
func (l *loraRegistrations) parseKey(key string) (name string, self, ok bool) {
	rest, ok := strings.CutPrefix(key, LoraRegistrationPrefix)
	if !ok {
		return "", false, false
	}
	name, inst, ok := strings.Cut(rest, "/")
	id, err := strconv.ParseUint(inst, 16, 64)
	if !ok || err != nil || name == "" {
		return "", false, false
	}
	return name, id == l.self, true
}

// put registers reg (this frontend's copy; the others copy it).
func (l *loraRegistrations) put(ctx context.Context, reg LoraRegistration) error {
	b, _ := json.Marshal(reg)
	if err := l.store.Put(ctx, l.key(reg.Name), b); err != nil {
		return err
	}
	l.mu.Lock()
	l.byName[reg.Name] = reg
	l.mu.Unlock()
	return nil
}

// remove deletes every frontend's copy of name's registration; it
// reports whether there was one.
func (l *loraRegistrations) remove(ctx context.Context, name string) (bool, error) {
	l.mu.Lock()
	_, had := l.byName[name]
	delete(l.byName, name)
	l.mu.Unlock()
	kvs, err := l.store.List(ctx, LoraRegistrationPrefix+name+"/")
	if err != nil {
		return had, err
	}
	for _, kv := range kvs {
		if err := l.store.Delete(ctx, kv.Key); err != nil {
			return had, err
		}
	}
	return had || len(kvs) > 0, nil
}

func (l *loraRegistrations) get(name string) (LoraRegistration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	reg, ok := l.byName[name]
	return reg, ok
}

func (l *loraRegistrations) all() []LoraRegistration {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]LoraRegistration, 0, len(l.byName))
	for _, reg := range l.byName {
		out = append(out, reg)
	}
	return out
}

// once runs load for name unless a load of it runs: then it waits for
// that one.
func (l *loraRegistrations) once(ctx context.Context, name string, load func()) {
	l.mu.Lock()
	if ch, running := l.loading[name]; running {
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		return
	}
	ch := make(chan struct{})
	l.loading[name] = ch
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.loading, name)
		l.mu.Unlock()
		close(ch)
	}()
	load()
}
