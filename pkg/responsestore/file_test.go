package responsestore

import (
	"context"

	"errors"
	bolt "go.etcd.io/bbolt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newFile(t *testing.T, cfg FileConfig) *File {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	if cfg.TTL == 0 {
		cfg.TTL = time.Hour
	}
	f, err := NewFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func TestFile(t *testing.T) {
	testStore(t, newFile(t, FileConfig{}))
}

// A record outlives a reopening of the file: the frontend restarts.
func TestFileKeepsRecordsAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	f := newFile(t, FileConfig{Dir: dir})
	if err := f.Put(t.Context(), record("resp_1", "hi")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, FileName)); err != nil {
		t.Fatal(err)
	}
	g := newFile(t, FileConfig{Dir: dir})
	if _, err := g.Get(t.Context(), "resp_1"); err != nil {
		t.Fatalf("Get after reopening: %v", err)
	}
}

func TestFileExpiry(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	f := newFile(t, FileConfig{TTL: time.Hour, Clock: clock.Now})
	ctx := t.Context()
	for _, id := range []string{"resp_old", "resp_new"} {
		if err := f.Put(ctx, record(id, "x")); err != nil {
			t.Fatal(err)
		}
		clock.Add(30 * time.Minute)
	}
	// resp_old was written an hour ago: gone, though not swept yet.
	if _, err := f.Get(ctx, "resp_old"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of an expired record: %v, want ErrNotFound", err)
	}
	if _, err := f.Get(ctx, "resp_new"); err != nil {
		t.Errorf("Get of a live record: %v", err)
	}
	if n, err := f.Sweep(); err != nil || n != 1 {
		t.Errorf("Sweep = %d, %v; want 1 record swept", n, err)
	}
	// A rewrite restarts the TTL: resp_new is rewritten 59 min after
	// its first write and kept another hour.
	clock.Add(29 * time.Minute)
	if err := f.Put(ctx, record("resp_new", "y")); err != nil {
		t.Fatal(err)
	}
	clock.Add(59 * time.Minute)
	if n, err := f.Sweep(); err != nil || n != 0 {
		t.Errorf("Sweep = %d, %v; want none: the rewrite restarted the TTL", n, err)
	}
	clock.Add(time.Minute)
	if n, err := f.Sweep(); err != nil || n != 1 {
		t.Errorf("Sweep = %d, %v; want 1", n, err)
	}
	if _, err := f.Get(ctx, "resp_new"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after the sweep: %v, want ErrNotFound", err)
	}
}

// Run sweeps on its own and closes the file when its context ends.
func TestFileRunSweeps(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	f := newFile(t, FileConfig{TTL: time.Hour, SweepEvery: 10 * time.Millisecond, Clock: clock.Now})
	if err := f.Put(t.Context(), record("resp_1", "x")); err != nil {
		t.Fatal(err)
	}
	clock.Add(2 * time.Hour)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		f.mu.Lock()
		var n int
		_ = f.db.View(func(tx *bolt.Tx) error { n = tx.Bucket(bucketRecords).Stats().KeyN; return nil })
		f.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Run did not sweep the expired record within 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	f.mu.Lock()
	closed := f.db == nil
	f.mu.Unlock()
	if !closed {
		t.Error("Run returned with the database open")
	}
}

// A data directory that cannot be made (here: its parent is a file, which
// stops root too) makes the store unavailable, until it can be.
func TestFileUnavailable(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(parent, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFile(t, FileConfig{Dir: filepath.Join(parent, "responses")})
	if err := f.Put(t.Context(), record("resp_1", "x")); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Put: %v, want ErrUnavailable", err)
	}
	if err := f.Delete(t.Context(), "resp_1"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Delete: %v, want ErrUnavailable", err)
	}
	if _, err := f.Get(t.Context(), "resp_1"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Get: %v, want ErrUnavailable", err)
	}
	// The directory can be made now: the store works without a restart.
	if err := os.Remove(parent); err != nil {
		t.Fatal(err)
	}
	if err := f.Put(t.Context(), record("resp_1", "x")); err != nil {
		t.Errorf("Put once the directory can be made: %v", err)
	}
}

// A second process on the same file waits a second for the lock, then
// finds the store unavailable.
func TestFileLocked(t *testing.T) {
	dir := t.TempDir()
	f := newFile(t, FileConfig{Dir: dir})
	if err := f.Put(t.Context(), record("resp_1", "x")); err != nil {
		t.Fatal(err)
	}
	g := newFile(t, FileConfig{Dir: dir})
	if _, err := g.Get(t.Context(), "resp_1"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Get from a second opener: %v, want ErrUnavailable", err)
	}
}

func TestFileTooLarge(t *testing.T) {
	f := newFile(t, FileConfig{MaxValueBytes: 1024})
	err := f.Put(t.Context(), record("resp_1", strings.Repeat("x", 2000)))
	if !errors.Is(err, ErrTooLarge) {
		t.Errorf("Put of a 2 kB record with a 1 kB limit: %v, want ErrTooLarge", err)
	}
}
