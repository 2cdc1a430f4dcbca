package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// loraEngineFake records what the adapter set does to the engine, and
// fails the test when an adapter with requests in flight is unloaded or
// more than max adapters are loaded.
type loraEngineFake struct {
	backend.Engine
	t   *testing.T
	max int

	mu       sync.Mutex
	loaded   []string
	inflight map[string]int
	log      []string
}

func (e *loraEngineFake) LoadLora(_ context.Context, name, path string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if path == "/refused" {
		return fmt.Errorf("%w: not an adapter", backend.ErrInvalidArgument)
	}
	if slices.Contains(e.loaded, name) {
		e.t.Errorf("LoadLora(%s) while loaded", name)
	}
	e.loaded = append(e.loaded, name)
	if e.max > 0 && len(e.loaded) > e.max {
		e.t.Errorf("%d adapters loaded (%v), max %d", len(e.loaded), e.loaded, e.max)
	}
	e.log = append(e.log, "load "+name)
	return nil
}

func (e *loraEngineFake) UnloadLora(_ context.Context, name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.inflight[name] > 0 {
		e.t.Errorf("UnloadLora(%s) with %d requests in flight", name, e.inflight[name])
	}
	i := slices.Index(e.loaded, name)
	if i < 0 {
		e.t.Errorf("UnloadLora(%s) while not loaded", name)
		return nil
	}
	e.loaded = slices.Delete(e.loaded, i, i+1)
	e.log = append(e.log, "unload "+name)
	return nil
}

func (e *loraEngineFake) isLoaded(name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Contains(e.loaded, name)
}

// fakeHost publishes cards into a map.
type fakeHost struct {
	mu    sync.Mutex
	cards map[string]string // key -> name
}

func (h *fakeHost) resolveLora(_ context.Context, source string) (string, error) {
	if source == "/missing" {
		return "", errors.New("no such directory")
	}
	return source, nil
}

func (h *fakeHost) publishLora(_ context.Context, name, _ string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cards["key/"+name] = name
	return "key/" + name, nil
}

func (h *fakeHost) withdrawLora(_ context.Context, key string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.cards, key)
	return nil
}

func newTestLoras(t *testing.T, max int) (*loras, *loraEngineFake, *fakeHost, *loraMetrics) {
	t.Helper()
	eng := &loraEngineFake{t: t, max: max, inflight: map[string]int{}}
	host := &fakeHost{cards: map[string]string{}}
	m, err := newLoraMetrics(prometheus.NewRegistry(), runtime.EndpointID{Namespace: "ns", Component: "backend", Name: "generate"})
	if err != nil {
		t.Fatal(err)
	}
	return newLoras(eng, max, host, slog.New(slog.DiscardHandler), m), eng, host, m
}

// serve acquires adapter name as a request does and marks it in flight
// in the engine until the returned function is called.
func serve(t *testing.T, l *loras, eng *loraEngineFake, name string) func() {
	t.Helper()
	release, err := l.acquire(t.Context(), name)
	if err != nil {
		t.Fatalf("acquire %s: %v", name, err)
	}
	eng.mu.Lock()
	if !slices.Contains(eng.loaded, name) {
		t.Errorf("request for %s admitted while the engine has %v", name, eng.loaded)
	}
	eng.inflight[name]++
	eng.mu.Unlock()
	return func() {
		eng.mu.Lock()
		eng.inflight[name]--
		eng.mu.Unlock()
		release()
	}
}

func (l *loras) draining(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.adapters[name]
	return a != nil && a.draining
}

// With --max-loras 1, a request for an adapter that is not active waits
// while the active one has requests in flight, and is served once they
// ended; every swap is counted.
func TestSwapWaitsForRequestsInFlight(t *testing.T) {
	l, eng, _, m := newTestLoras(t, 1)
	for _, name := range []string{"a", "b"} {
		if err := l.load(t.Context(), name, "/"+name); err != nil {
			t.Fatal(err)
		}
	}
	// Loading b made room by unloading a (idle).
	if got := testutil.ToFloat64(m.swaps); got != 1 || !eng.isLoaded("b") || eng.isLoaded("a") {
		t.Fatalf("after loading a then b: swaps %v, engine %v", got, eng.loaded)
	}
	if held, active := testutil.ToFloat64(m.held), testutil.ToFloat64(m.active); held != 2 || active != 1 {
		t.Fatalf("gauges held %v active %v, want 2 and 1", held, active)
	}

	endA := serve(t, l, eng, "a") // swaps b out
	got := make(chan func(), 1)
	go func() {
		release, err := l.acquire(context.Background(), "b")
		if err != nil {
			t.Errorf("acquire b: %v", err)
			release = func() {}
		}
		got <- release
	}()
	testenv.WaitFor(t, 5*time.Second, "the request for b to drain a", func() bool { return l.draining("a") })
	select {
	case <-got:
		t.Fatal("b was served while a request of a was in flight")
	default:
	}
	if !eng.isLoaded("a") {
		t.Fatal("a was unloaded under its request")
	}
	endA()
	select {
	case release := <-got:
		if !eng.isLoaded("b") || eng.isLoaded("a") {
			t.Errorf("b admitted while the engine has %v", eng.loaded)
		}
		release()
	case <-time.After(5 * time.Second):
		t.Fatal("b not served 5 s after a's request ended")
	}
	if got := testutil.ToFloat64(m.swaps); got != 3 {
		t.Fatalf("swaps %v, want 3 (b for a at load, a for b, b for a)", got)
	}
	if want := []string{"load a", "unload a", "load b", "unload b", "load a", "unload a", "load b"}; !slices.Equal(eng.log, want) {
		t.Fatalf("engine log %v, want %v", eng.log, want)
	}
}

// The adapter swapped out is the least recently used one with no request
// in flight.
func TestSwapUnloadsTheLeastRecentlyUsedIdleAdapter(t *testing.T) {
	l, eng, _, _ := newTestLoras(t, 2)
	for _, name := range []string{"a", "b"} {
		if err := l.load(t.Context(), name, "/"+name); err != nil {
			t.Fatal(err)
		}
	}
	serve(t, l, eng, "a")()
	endB := serve(t, l, eng, "b") // b is the most recent, and busy
	if err := l.load(t.Context(), "c", "/c"); err != nil {
		t.Fatal(err)
	}
	if !eng.isLoaded("b") || !eng.isLoaded("c") || eng.isLoaded("a") {
		t.Fatalf("engine %v, want b and c (a was the least recently used)", eng.loaded)
	}
	endB()
	serve(t, l, eng, "c")()
	serve(t, l, eng, "a")() // b is now the least recently used
	if !eng.isLoaded("a") || !eng.isLoaded("c") || eng.isLoaded("b") {
		t.Fatalf("engine %v, want a and c", eng.loaded)
	}
	res := l.list()
	if len(res.Adapters) != 3 || res.Adapters[0].Name != "a" || !res.Adapters[0].Active || res.Adapters[1].Active {
		t.Fatalf("list %+v", res)
	}
}

// Unloading withdraws the card at once (new requests are refused) and
// unloads the adapter from the engine once its requests ended.
func TestUnloadWaitsForRequestsInFlight(t *testing.T) {
	l, eng, host, _ := newTestLoras(t, 0)
	if err := l.load(t.Context(), "a", "/a"); err != nil {
		t.Fatal(err)
	}
	end := serve(t, l, eng, "a")
	done := make(chan error, 1)
	go func() { done <- l.unload(context.Background(), "a") }()
	testenv.WaitFor(t, 5*time.Second, "the card to be withdrawn", func() bool {
		host.mu.Lock()
		defer host.mu.Unlock()
		return len(host.cards) == 0
	})
	if _, err := l.acquire(t.Context(), "a"); err == nil {
		t.Fatal("a new request for an adapter being unloaded was admitted")
	}
	if !eng.isLoaded("a") {
		t.Fatal("unloaded under a request in flight")
	}
	end()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if eng.isLoaded("a") {
		t.Fatal("still loaded after unload")
	}
}

// A failed load (source or engine) leaves nothing behind; the same name
// and source again is a no-op, another source an error.
func TestLoadFailuresLeaveNothing(t *testing.T) {
	l, eng, host, m := newTestLoras(t, 0)
	for _, src := range []string{"/missing", "/refused"} {
		if err := l.load(t.Context(), "a", src); err == nil {
			t.Fatalf("load from %s succeeded", src)
		}
	}
	if len(host.cards) != 0 || len(eng.loaded) != 0 || len(l.list().Adapters) != 0 || testutil.ToFloat64(m.held) != 0 {
		t.Fatalf("after failed loads: cards %v, engine %v, list %v", host.cards, eng.loaded, l.list())
	}
	if err := l.load(t.Context(), "a", "/a"); err != nil {
		t.Fatal(err)
	}
	if err := l.load(t.Context(), "a", "/a"); err != nil {
		t.Fatalf("same name and source again: %v", err)
	}
	if err := l.load(t.Context(), "a", "/other"); !errors.Is(err, backend.ErrInvalidArgument) {
		t.Fatalf("another source: %v", err)
	}
	if want := []string{"load a"}; !slices.Equal(eng.log, want) {
		t.Fatalf("engine log %v, want %v", eng.log, want)
	}
}

// A request waiting for a slot for an adapter that is unloaded meanwhile
// is refused, and the adapter does not reach the engine.
func TestUnloadWhileARequestWaitsForASlot(t *testing.T) {
	l, eng, _, _ := newTestLoras(t, 1)
	for _, name := range []string{"a", "b"} {
		if err := l.load(t.Context(), name, "/"+name); err != nil {
			t.Fatal(err)
		}
	}
	endB := serve(t, l, eng, "b")
	waited := make(chan error, 1)
	go func() {
		release, err := l.acquire(context.Background(), "a")
		if err == nil {
			release()
		}
		waited <- err
	}()
	testenv.WaitFor(t, 5*time.Second, "the request for a to drain b", func() bool { return l.draining("b") })
	if err := l.unload(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	endB()
	if err := <-waited; !errors.Is(err, backend.ErrInvalidArgument) {
		t.Fatalf("the waiting request: %v, want it refused", err)
	}
	if eng.isLoaded("a") || !eng.isLoaded("b") || l.draining("b") {
		t.Fatalf("engine %v, b draining %v; want b alone, serving again", eng.loaded, l.draining("b"))
	}
	serve(t, l, eng, "b")()
}
