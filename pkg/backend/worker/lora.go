package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// LoraAdapter is an adapter to load at start (Config.Loras).
type LoraAdapter struct {
	// Name is the adapter's served name (modelcard.ValidLoraName).
	Name string
	// Source is where it comes from: file:///ABS/DIR, an absolute
	// directory, or hf://ORG/NAME[@REVISION].
	Source string
}

// adapterState is where an adapter is in the engine.
type adapterState uint8

const (
	adapterInactive  adapterState = iota // held, not in the engine
	adapterLoading                       // LoadLora running
	adapterActive                        // in the engine
	adapterUnloading                     // UnloadLora running
)

// adapter is one LoRA adapter the worker holds (or is loading for the
// lora endpoint). Its fields are guarded by loras.mu.
type adapter struct {
	name, source, path string
	key                string // its card's discovery key once published
	// registered: its card is published and requests may use it.
	registered bool
	state      adapterState
	// draining: a swap waits for its requests to end to unload it; new
	// requests for it wait too.
	draining bool
	inflight int    // requests being served with it
	used     uint64 // loras.clock at its last use, for the LRU choice
}

// loraHost is what the adapter set needs from the worker: where the
// adapters' files are and how their cards are published and withdrawn.
type loraHost interface {
	resolveLora(ctx context.Context, source string) (path string, err error)
	publishLora(ctx context.Context, name, source string) (key string, err error)
	withdrawLora(ctx context.Context, key string) error
}

// loras is the set of LoRA adapters a worker holds: it loads and unloads
// them in the engine, publishes their cards, and admits each request for
// an adapter, activating it first when --max-loras left it out of the
// engine (a swap: the least recently used adapter with no request in
// flight is unloaded to make room; when every active adapter has
// requests in flight, the least recently used one is drained, new
// requests for it waiting, and unloaded when its last request ends).
// It is safe for concurrent use.
type loras struct {
	engine  backend.LoraEngine // nil: the engine cannot load adapters
	max     int                // adapters active at once; 0: no limit
	host    loraHost
	log     *slog.Logger
	metrics *loraMetrics

	ops sync.Mutex // serializes load and unload

	mu       sync.Mutex
	adapters map[string]*adapter
	clock    uint64
	changed  chan struct{} // closed and replaced at every change
}

func newLoras(engine backend.Engine, max int, host loraHost, log *slog.Logger, m *loraMetrics) *loras {
	le, _ := engine.(backend.LoraEngine)
	return &loras{engine: le, max: max, host: host, log: log, metrics: m,
		adapters: map[string]*adapter{}, changed: make(chan struct{})}
}

// errNoLoraEngine answers a load on an engine that is not a
// backend.LoraEngine.
var errNoLoraEngine = runtime.NewError(backend.TypeInvalidArgument, "this engine cannot load LoRA adapters")

// notLoaded is the error for a request or an unload naming an adapter
// this worker does not hold.
func notLoaded(name string) error {
	return runtime.NewError(backend.TypeInvalidArgument, "LoRA adapter %q is not loaded on this worker", name)
}

// load loads adapter name from source and publishes its card; loading a
// name held with the same source does nothing. A failed load leaves
// nothing behind.
func (l *loras) load(ctx context.Context, name, source string) error {
	if !modelcard.ValidLoraName(name) {
		return fmt.Errorf("%w: LoRA adapter name %q: want 1 to 128 bytes without '/' or white space", backend.ErrInvalidArgument, name)
	}
	if l.engine == nil {
		return errNoLoraEngine
	}
	l.ops.Lock()
	defer l.ops.Unlock()
	start := time.Now()
	l.mu.Lock()
	a := l.adapters[name]
	switch {
	case a == nil:
	case a.registered && a.source == source:
		l.mu.Unlock()
		return nil
	case a.registered:
		l.mu.Unlock()
		return fmt.Errorf("%w: LoRA adapter %q is already loaded from %s; unload it before loading it from %s",
			backend.ErrInvalidArgument, name, a.source, source)
	case a.source == source:
		// Left by an unload that stopped waiting for its requests: it
		// is still in the engine (or was swapped out); publish it again.
		l.mu.Unlock()
		return l.publish(ctx, a, start)
	default:
		// Left by an unload that stopped waiting, from another source:
		// finish that unload first.
		if err := l.finishUnload(ctx, a); err != nil {
			l.mu.Unlock()
			return fmt.Errorf("LoRA adapter %q: unloading its previous source %s: %w", name, a.source, err)
		}
	}
	l.mu.Unlock()

	path, err := l.host.resolveLora(ctx, source)
	if err != nil {
		return fmt.Errorf("LoRA adapter %q: %w", name, err)
	}
	a = &adapter{name: name, source: source, path: path}
	l.mu.Lock()
	l.adapters[name] = a
	err = l.activate(ctx, a)
	l.mu.Unlock()
	if err != nil {
		l.drop(a)
		return fmt.Errorf("LoRA adapter %q: %w", name, err)
	}
	return l.publish(ctx, a, start)
}

// publish publishes a loaded adapter's card and lets requests use it; on
// failure it drops the adapter.
func (l *loras) publish(ctx context.Context, a *adapter, start time.Time) error {
	key, err := l.host.publishLora(ctx, a.name, a.source)
	if err != nil {
		l.drop(a)
		return fmt.Errorf("LoRA adapter %q: %w", a.name, err)
	}
	l.mu.Lock()
	a.key, a.registered = key, true
	l.changedLocked()
	l.mu.Unlock()
	l.log.Info("worker: LoRA adapter loaded", "lora_name", a.name, "source", a.source, "path", a.path, "took", time.Since(start))
	return nil
}

// unload withdraws adapter name's card, waits for its requests to end
// (or ctx), and unloads it from the engine.
func (l *loras) unload(ctx context.Context, name string) error {
	l.ops.Lock()
	defer l.ops.Unlock()
	start := time.Now()
	l.mu.Lock()
	a := l.adapters[name]
	if a == nil || !a.registered {
		l.mu.Unlock()
		return notLoaded(name)
	}
	a.registered = false // new requests are refused from now on
	l.changedLocked()
	l.mu.Unlock()
	if err := l.host.withdrawLora(ctx, a.key); err != nil {
		l.mu.Lock()
		a.registered = true
		l.changedLocked()
		l.mu.Unlock()
		return fmt.Errorf("LoRA adapter %q: withdrawing its card: %w", name, err)
	}
	l.mu.Lock()
	err := l.finishUnload(ctx, a)
	l.mu.Unlock()
	if err != nil {
		return fmt.Errorf("LoRA adapter %q: %w", name, err)
	}
	l.log.Info("worker: LoRA adapter unloaded", "lora_name", name, "source", a.source, "took", time.Since(start))
	return nil
}

// finishUnload waits for an unregistered adapter's requests to end and
// for the engine to finish with it, then unloads it from the engine and
// forgets it. When ctx ends first, the adapter stays (unregistered, still
// holding its slot and a candidate for the next swap) and the error says
// so. Called and returning with l.mu held.
func (l *loras) finishUnload(ctx context.Context, a *adapter) error {
	for a.inflight > 0 || a.state == adapterLoading || a.state == adapterUnloading {
		if err := l.wait(ctx); err != nil {
			return fmt.Errorf("waiting for its %d requests in flight to end: %w", a.inflight, err)
		}
	}
	if a.state == adapterActive {
		a.state = adapterUnloading
		l.mu.Unlock()
		err := l.engine.UnloadLora(context.WithoutCancel(ctx), a.name)
		l.mu.Lock()
		if err != nil {
			a.state = adapterActive
			l.changedLocked()
			return err
		}
	}
	delete(l.adapters, a.name)
	l.changedLocked()
	return nil
}

// drop forgets an adapter whose load failed, unloading it from the
// engine if it got there (once requests left on it by an earlier unload
// ended).
func (l *loras) drop(a *adapter) {
	l.mu.Lock()
	for a.inflight > 0 || a.state == adapterLoading || a.state == adapterUnloading {
		_ = l.wait(context.Background())
	}
	delete(l.adapters, a.name)
	active := a.state == adapterActive
	l.changedLocked()
	l.mu.Unlock()
	if active {
		if err := l.engine.UnloadLora(context.Background(), a.name); err != nil {
			l.log.Warn("worker: unloading a LoRA adapter whose load failed", "lora_name", a.name, "err", err)
		}
	}
}

// list returns the adapters held, by name.
func (l *loras) list() modelcard.LoraResult {
	l.mu.Lock()
	defer l.mu.Unlock()
	res := modelcard.LoraResult{Adapters: []modelcard.LoraState{}, MaxLoras: l.max, ActiveSlots: l.activeCount()}
	for _, a := range l.adapters {
		if a.registered {
			res.Adapters = append(res.Adapters, modelcard.LoraState{Name: a.name, Source: a.source, Active: a.state == adapterActive})
		}
	}
	slices.SortFunc(res.Adapters, func(x, y modelcard.LoraState) int { return strings.Compare(x.Name, y.Name) })
	return res
}

// acquire admits a request for adapter name: it refuses an adapter this
// worker does not hold, activates a held one that is not in the engine,
// and counts the request in flight until release is called.
func (l *loras) acquire(ctx context.Context, name string) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		a := l.adapters[name]
		if a == nil || !a.registered {
			return nil, notLoaded(name)
		}
		if a.state == adapterActive && !a.draining {
			a.inflight++
			l.clock++
			a.used = l.clock
			return func() { l.release(a) }, nil
		}
		if a.state == adapterInactive {
			if err := l.activate(ctx, a); err != nil {
				return nil, fmt.Errorf("LoRA adapter %q: %w", name, err)
			}
			continue
		}
		if err := l.wait(ctx); err != nil { // loading, unloading or draining
			return nil, err
		}
	}
}

func (l *loras) release(a *adapter) {
	l.mu.Lock()
	a.inflight--
	if a.inflight == 0 {
		l.changedLocked()
	}
	l.mu.Unlock()
}

// activate loads a into the engine, first unloading the least recently
// used active adapter when --max-loras adapters are active (a swap). It
// is called with l.mu held, which it releases while the engine works,
// and returns with a active, or an error with a as it was (or inactive).
func (l *loras) activate(ctx context.Context, a *adapter) error {
	var drained *adapter // the adapter this call marked draining
	defer func() {
		if drained != nil && drained.draining {
			drained.draining = false
			l.changedLocked()
		}
	}()
	for {
		if l.adapters[a.name] != a {
			return notLoaded(a.name) // unloaded while this waited
		}
		switch a.state {
		case adapterActive:
			return nil
		case adapterLoading, adapterUnloading:
			if err := l.wait(ctx); err != nil {
				return err
			}
			continue
		}
		if l.max == 0 || l.activeCount() < l.max {
			return l.engineLoad(ctx, a)
		}
		victim := l.victim(a)
		if victim == nil || victim.inflight > 0 {
			if victim != nil && drained == nil {
				victim.draining, drained = true, victim
				l.changedLocked()
			}
			if err := l.wait(ctx); err != nil {
				return err
			}
			continue
		}
		victim.state, victim.draining = adapterUnloading, false
		a.state = adapterLoading
		l.mu.Unlock()
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		err := l.engine.UnloadLora(uctx, victim.name)
		cancel()
		l.mu.Lock()
		if err != nil {
			victim.state, a.state = adapterActive, adapterInactive
			l.changedLocked()
			return fmt.Errorf("unloading LoRA adapter %q to make room for it: %w", victim.name, err)
		}
		victim.state = adapterInactive
		l.metrics.swaps.Inc()
		l.log.Info("worker: LoRA adapter swapped out", "lora_name", victim.name, "for", a.name, "max_loras", l.max)
		a.state = adapterInactive
		if err := l.engineLoad(ctx, a); err != nil {
			return err
		}
		return nil
	}
}

// engineLoad runs LoadLora for an inactive adapter with a free slot;
// called and returning with l.mu held.
func (l *loras) engineLoad(ctx context.Context, a *adapter) error {
	a.state = adapterLoading
	l.changedLocked()
	l.mu.Unlock()
	err := l.engine.LoadLora(ctx, a.name, a.path)
	l.mu.Lock()
	if err != nil {
		a.state = adapterInactive
	} else {
		a.state = adapterActive
	}
	l.changedLocked()
	return err
}

// activeCount counts the adapters in the engine or on their way in or
// out (each holds a slot).
func (l *loras) activeCount() int {
	n := 0
	for _, a := range l.adapters {
		if a.state != adapterInactive {
			n++
		}
	}
	return n
}

// victim is the active adapter to unload for want: the least recently
// used one with no request in flight, else (when every one has requests)
// the least recently used one, or one already draining; nil when none is
// active but want.
func (l *loras) victim(want *adapter) *adapter {
	var idle, busy *adapter
	for _, a := range l.adapters {
		if a == want || a.state != adapterActive {
			continue
		}
		if a.inflight == 0 {
			if idle == nil || a.used < idle.used {
				idle = a
			}
			continue
		}
		if busy == nil || a.draining && !busy.draining || a.draining == busy.draining && a.used < busy.used {
			busy = a
		}
	}
	if idle != nil {
		return idle
	}
	return busy
}

// wait waits, with l.mu released, for the next change or ctx's end.
func (l *loras) wait(ctx context.Context) error {
	ch := l.changed
	l.mu.Unlock()
	defer l.mu.Lock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// changedLocked wakes the waiters and updates the gauges; l.mu is held.
func (l *loras) changedLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
	held, active := 0, 0
	for _, a := range l.adapters {
		if a.registered {
			held++
			if a.state == adapterActive {
				active++
			}
		}
	}
	l.metrics.set(held, active)
}

// withdrawAll removes every adapter's card (at shutdown, or when the
// start fails); the adapters keep serving the requests that still come
// during the shutdown's grace period, and the engine's Cleanup drops
// them.
func (l *loras) withdrawAll(ctx context.Context) {
	l.mu.Lock()
	var keys []string
	for _, a := range l.adapters {
		if a.registered {
			keys = append(keys, a.key)
		}
	}
	l.mu.Unlock()
	for _, k := range keys {
		if err := l.host.withdrawLora(ctx, k); err != nil && !errors.Is(err, context.Canceled) {
			l.log.Warn("worker: removing a LoRA adapter's card failed; it expires with the lease", "key", k, "err", err)
		}
	}
}
