package discovery_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/internal/testenv"
	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
	"github.com/google/go-cmp/cmp"
)

// backend makes stores that share one key space (an etcd server, a
// directory, a MemSpace), as the processes of one deployment do.
type backend struct {
	name string
	// newStore returns a new store with the given TTL (0: the back-end's
	// default) and its own instance id. The store is closed when the test
	// ends.
	newStore func(t *testing.T, ttl time.Duration) discovery.Store
	// shortTTL is the TTL used by the expiry tests; 0 if keys never expire.
	shortTTL time.Duration
}

func etcdBackend(t *testing.T) backend {
	srv := testenv.StartEtcd(t)
	return backend{
		name: "etcd",
		newStore: func(t *testing.T, ttl time.Duration) discovery.Store {
			t.Helper()
			return newEtcd(t, srv, ttl)
		},
		shortTTL: 2 * time.Second,
	}
}

func newEtcd(t *testing.T, srv *testenv.Etcd, ttl time.Duration) *discovery.Etcd {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLong)
	defer cancel()
	s, err := discovery.NewEtcd(ctx, discovery.EtcdConfig{
		Endpoints:   []string{srv.URL},
		TTL:         ttl,
		DialTimeout: 2 * time.Second,
		Logger:      slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func fileBackend(t *testing.T) backend {
	dir := t.TempDir()
	return backend{
		name: "file",
		newStore: func(t *testing.T, ttl time.Duration) discovery.Store {
			t.Helper()
			return newFile(t, dir, ttl)
		},
		shortTTL: time.Second,
	}
}

func newFile(t *testing.T, dir string, ttl time.Duration) *discovery.File {
	t.Helper()
	s, err := discovery.NewFile(discovery.FileConfig{Dir: dir, TTL: ttl, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func memBackend(*testing.T) backend {
	space := discovery.NewMemSpace()
	return backend{
		name: "mem",
		newStore: func(t *testing.T, _ time.Duration) discovery.Store {
			s := space.NewStore()
			t.Cleanup(func() { s.Close() })
			return s
		},
	}
}

// TestStores runs the behaviour every Store must have against each
// back-end.
func TestStores(t *testing.T) {
	for _, mk := range []func(*testing.T) backend{memBackend, fileBackend, etcdBackend} {
		b := mk(t)
		t.Run(b.name, func(t *testing.T) { testStore(t, b) })
	}
}

// testStore is the shared suite. Each subtest uses its own key prefix, so
// they can share the back-end's key space.
func testStore(t *testing.T, b backend) {
	t.Run("ReadWrite", func(t *testing.T) { testReadWrite(t, b) })
	t.Run("Watch", func(t *testing.T) { testWatch(t, b) })
	t.Run("WatchOtherStore", func(t *testing.T) { testWatchOtherStore(t, b) })
	t.Run("CloseDeletesKeys", func(t *testing.T) { testCloseDeletesKeys(t, b) })
	t.Run("WatchEndsWithCtx", func(t *testing.T) { testWatchEndsWithCtx(t, b) })
	t.Run("Closed", func(t *testing.T) { testClosed(t, b) })
	t.Run("Expiry", func(t *testing.T) { testExpiry(t, b) })
}

func testReadWrite(t *testing.T, b backend) {
	ctx := t.Context()
	s1, s2 := b.newStore(t, 0), b.newStore(t, 0)
	runStore(t, s1)
	runStore(t, s2)
	if s1.ID() == 0 || s1.ID() == s2.ID() {
		t.Fatalf("IDs %x and %x: want distinct and non-zero", s1.ID(), s2.ID())
	}
	const p = "rw/"
	steps := []struct {
		name    string
		do      func() error
		wantErr error
		list    []discovery.KeyValue // List(p) after the step
	}{
		{"create a", func() error { return s1.Create(ctx, p+"a", []byte("1")) }, nil, kvs(p+"a", "1")},
		{"create a same value", func() error { return s1.Create(ctx, p+"a", []byte("1")) }, nil, kvs(p+"a", "1")},
		{"create a other value", func() error { return s1.Create(ctx, p+"a", []byte("2")) }, discovery.ErrExists, kvs(p+"a", "1")},
		{"other store creates a same value", func() error { return s2.Create(ctx, p+"a", []byte("1")) }, nil, kvs(p+"a", "1")},
		{"other store creates a other value", func() error { return s2.Create(ctx, p+"a", []byte("x")) }, discovery.ErrExists, kvs(p+"a", "1")},
		{"put a", func() error { return s1.Put(ctx, p+"a", []byte("2")) }, nil, kvs(p+"a", "2")},
		{"other store creates c", func() error { return s2.Create(ctx, p+"c", []byte("3")) }, nil, kvs(p+"a", "2", p+"c", "3")},
		{"put b/x", func() error { return s1.Put(ctx, p+"b/x", []byte("4")) }, nil, kvs(p+"a", "2", p+"b/x", "4", p+"c", "3")},
		{"put outside prefix", func() error { return s1.Put(ctx, "rx/a", []byte("5")) }, nil, kvs(p+"a", "2", p+"b/x", "4", p+"c", "3")},
		{"delete a", func() error { return s1.Delete(ctx, p+"a") }, nil, kvs(p+"b/x", "4", p+"c", "3")},
		{"delete missing", func() error { return s1.Delete(ctx, p+"zz") }, nil, kvs(p+"b/x", "4", p+"c", "3")},
		{"other store deletes c", func() error { return s2.Delete(ctx, p+"c") }, nil, kvs(p+"b/x", "4")},
		{"create a again", func() error { return s1.Create(ctx, p+"a", []byte("6")) }, nil, kvs(p+"a", "6", p+"b/x", "4")},
	}
	for _, st := range steps {
		err := st.do()
		if !errors.Is(err, st.wantErr) {
			t.Fatalf("%s: err %v, want %v", st.name, err, st.wantErr)
		}
		for _, s := range []discovery.Store{s1, s2} {
			got, err := s.List(ctx, p)
			if err != nil {
				t.Fatalf("%s: List: %v", st.name, err)
			}
			if diff := cmp.Diff(st.list, got); diff != "" {
				t.Fatalf("%s: List (-want +got):\n%s", st.name, diff)
			}
		}
	}
	all, err := s1.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 3 {
		t.Errorf("List(\"\") = %v, want every key", all)
	}
}

func testWatch(t *testing.T, b backend) {
	ctx := t.Context()
	s := b.newStore(t, 0)
	runStore(t, s)
	const p = "watch/"
	for _, k := range []string{"b", "a"} {
		if err := s.Put(ctx, p+k, []byte("v"+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put(ctx, "watchx", []byte("outside")); err != nil {
		t.Fatal(err)
	}
	ch, err := s.Watch(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, ch)
	want := discovery.Event{Type: discovery.EventResync, Snapshot: kvs(p+"a", "va", p+"b", "vb")}
	if diff := cmp.Diff(want, ev); diff != "" {
		t.Fatalf("first event (-want +got):\n%s", diff)
	}
	// One change at a time, so that polling back-ends report each.
	changes := []struct {
		do   func() error
		want *discovery.Event // nil: no event (checked by the next change)
	}{
		{func() error { return s.Put(ctx, p+"c", []byte("vc")) }, &discovery.Event{Type: discovery.EventPut, Key: p + "c", Value: []byte("vc")}},
		{func() error { return s.Put(ctx, p+"a", []byte("va2")) }, &discovery.Event{Type: discovery.EventPut, Key: p + "a", Value: []byte("va2")}},
		{func() error { return s.Delete(ctx, p+"b") }, &discovery.Event{Type: discovery.EventDelete, Key: p + "b"}},
		{func() error { return s.Put(ctx, "watchy", []byte("outside")) }, nil},
		{func() error { return s.Create(ctx, p+"d", []byte("vd")) }, &discovery.Event{Type: discovery.EventPut, Key: p + "d", Value: []byte("vd")}},
	}
	for i, c := range changes {
		if err := c.do(); err != nil {
			t.Fatal(err)
		}
		if c.want == nil {
			continue
		}
		if diff := cmp.Diff(*c.want, nextEvent(t, ch)); diff != "" {
			t.Fatalf("change %d (-want +got):\n%s", i, diff)
		}
	}
}

func testWatchOtherStore(t *testing.T, b backend) {
	ctx := t.Context()
	s1, s2 := b.newStore(t, 0), b.newStore(t, 0)
	runStore(t, s1)
	runStore(t, s2)
	const p = "other/"
	if err := s2.Put(ctx, p+"x", []byte("1")); err != nil {
		t.Fatal(err)
	}
	ch, err := s1.Watch(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	v := view{}
	v.apply(nextEvent(t, ch))
	if diff := cmp.Diff(view{p + "x": "1"}, v); diff != "" {
		t.Fatalf("resync (-want +got):\n%s", diff)
	}
	if err := s2.Put(ctx, p+"y", []byte("2")); err != nil {
		t.Fatal(err)
	}
	if err := s2.Delete(ctx, p+"x"); err != nil {
		t.Fatal(err)
	}
	waitView(t, ch, v, view{p + "y": "2"}, waitLong)
}

func testCloseDeletesKeys(t *testing.T, b backend) {
	ctx := t.Context()
	s1, s2 := b.newStore(t, 0), b.newStore(t, 0)
	runStore(t, s1)
	run2 := runStore(t, s2)
	const p = "close/"
	for _, k := range []string{"a", "b"} {
		if err := s2.Put(ctx, p+k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s1.Put(ctx, p+"mine", []byte("m")); err != nil {
		t.Fatal(err)
	}
	ch, err := s1.Watch(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	v := view{}
	waitView(t, ch, v, view{p + "a": "a", p + "b": "b", p + "mine": "m"}, waitLong)
	start := time.Now()
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	// "At once": well before any TTL could have expired.
	waitView(t, ch, v, view{p + "mine": "m"}, 3*time.Second)
	t.Logf("keys gone %v after Close", time.Since(start))
	if err := run2.wait(t); err != nil {
		t.Errorf("Run after Close = %v, want nil", err)
	}
}

func testWatchEndsWithCtx(t *testing.T, b backend) {
	s := b.newStore(t, 0)
	runStore(t, s)
	ctx, cancel := context.WithCancel(t.Context())
	ch, err := s.Watch(ctx, "ctx/")
	if err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, ch); ev.Type != discovery.EventResync {
		t.Fatalf("first event %v, want EventResync", ev.Type)
	}
	cancel()
	waitClosed(t, ch)
	// A consumer that never reads does not keep the watch alive either.
	ctx, cancel = context.WithCancel(t.Context())
	if _, err := s.Watch(ctx, "ctx/"); err != nil {
		t.Fatal(err)
	}
	cancel()
	// goleak (TestMain) checks the goroutine ended.
}

func testClosed(t *testing.T, b backend) {
	ctx := t.Context()
	s := b.newStore(t, 0)
	run := runStore(t, s)
	ch, err := s.Watch(ctx, "closed/")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
		t.Fatal("Done closed before Close")
	default:
	}
	if err := s.Err(); err != nil {
		t.Fatalf("Err before Close = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	<-s.Done()
	if err := s.Err(); !errors.Is(err, discovery.ErrClosed) {
		t.Fatalf("Err = %v, want ErrClosed", err)
	}
	waitClosed(t, ch)
	if err := run.wait(t); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	if err := s.Put(ctx, "closed/a", nil); !errors.Is(err, discovery.ErrClosed) {
		t.Errorf("Put after Close = %v, want ErrClosed", err)
	}
	if _, err := s.Watch(ctx, "closed/"); !errors.Is(err, discovery.ErrClosed) {
		t.Errorf("Watch after Close = %v, want ErrClosed", err)
	}
	if err := s.Run(ctx); err != nil {
		t.Errorf("Run after Close = %v, want nil", err)
	}
}

// orphaner is a store that can simulate the death of its process.
type orphaner interface {
	discovery.Store
	Orphan()
}

func testExpiry(t *testing.T, b backend) {
	if b.shortTTL == 0 {
		t.Skip("keys of this back-end do not expire")
	}
	t.Parallel()
	ctx := t.Context()
	// File stores judge expiry by their own TTL, so every process sharing
	// a directory must use the same one.
	watcher := b.newStore(t, b.shortTTL)
	runStore(t, watcher)
	dying, ok := b.newStore(t, b.shortTTL).(orphaner)
	if !ok {
		t.Fatal("store has no Orphan")
	}
	runStore(t, dying)
	const p = "expiry/"
	if err := dying.Put(ctx, p+"k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	ch, err := watcher.Watch(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	v := view{}
	waitView(t, ch, v, view{p + "k": "v"}, waitLong)

	// While Run keeps it alive, the key outlives its TTL.
	alive := time.After(2 * b.shortTTL)
	for done := false; !done; {
		select {
		case ev := <-ch:
			t.Fatalf("event %+v while the owner is alive", ev)
		case <-alive:
			done = true
		}
	}

	start := time.Now()
	dying.Orphan()
	<-dying.Done()
	// Expiry takes the TTL plus the back-end's check period (etcd: up to
	// about a second more); allow a generous margin.
	waitView(t, ch, v, view{}, b.shortTTL+10*time.Second)
	took := time.Since(start)
	t.Logf("key expired %v after Orphan (TTL %v)", took, b.shortTTL)
	if took < b.shortTTL/4 {
		t.Errorf("key gone after %v, before the TTL %v", took, b.shortTTL)
	}
}
