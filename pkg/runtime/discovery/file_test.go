package discovery_test

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime/discovery"
	"github.com/google/go-cmp/cmp"
)

// TestFileSweep checks that expired files are ignored at once and deleted
// by Run, whoever wrote them.
func TestFileSweep(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	files := map[string]bool{ // name: expired
		"stale%2Fkey":  true,
		".tmp_crashed": true,
		"fresh%2Fkey":  false,
		"not%2fcanon":  false, // stray: ignored, not an expired key
	}
	for name, expired := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		if expired {
			if err := os.Chtimes(path, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	s := newFile(t, dir, time.Second)
	got, err := s.List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(kvs("fresh/key", "fresh%2Fkey"), got); diff != "" {
		t.Fatalf("List before the sweep (-want +got):\n%s", diff)
	}
	runStore(t, s)
	deadline := time.Now().Add(waitLong)
	for {
		_, err1 := os.Stat(filepath.Join(dir, "stale%2Fkey"))
		_, err2 := os.Stat(filepath.Join(dir, ".tmp_crashed"))
		if errors.Is(err1, os.ErrNotExist) && errors.Is(err2, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("expired files not swept")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The fresh file has no owner touching it: it expires and is swept too.
	for {
		if _, err := os.Stat(filepath.Join(dir, "fresh%2Fkey")); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("unowned file not swept after its TTL")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestFileLayout checks the on-disk format: one flat file per key, named by
// the percent-encoded key, holding the value, and no temporary files left.
func TestFileLayout(t *testing.T) {
	dir := t.TempDir()
	s := newFile(t, dir, 0)
	ctx := t.Context()
	for key, value := range map[string]string{
		"v1/instances/ns/comp/ep:1a": "x",
		"plain":                      "y",
		"sp ace.%":                   "z",
	} {
		if err := s.Put(ctx, key, []byte(value)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Create(ctx, "created", []byte("c")); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got[e.Name()] = string(b)
	}
	want := map[string]string{
		"v1%2Finstances%2Fns%2Fcomp%2Fep%3A1a": "x",
		"plain":                                "y",
		"sp%20ace%2E%25":                       "z",
		"created":                              "c",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("directory (-want +got):\n%s", diff)
	}
	if err := s.Put(ctx, "", nil); err == nil {
		t.Error("Put with an empty key succeeded")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files left after Close: %v", ents)
	}
}

// TestFileCreateRace checks that Create is atomic across processes.
func TestFileCreateRace(t *testing.T) {
	dir := t.TempDir()
	const n = 8
	stores := make([]*discovery.File, n)
	for i := range stores {
		stores[i] = newFile(t, dir, 0)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() { errs[i] = s.Create(t.Context(), "race", []byte{byte(i)}) })
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, discovery.ErrExists):
			t.Errorf("store %d: %v", i, err)
		}
	}
	if won != 1 {
		t.Errorf("%d Creates succeeded, want 1 (%v)", won, errs)
	}
}

// TestFileLeaseLost checks that a store whose keys went untouched for
// longer than the TTL (a stalled process) reports the loss.
func TestFileLeaseLost(t *testing.T) {
	s := newFile(t, t.TempDir(), time.Second)
	if err := s.Put(t.Context(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond)
	if err := s.Run(t.Context()); !errors.Is(err, discovery.ErrLeaseLost) {
		t.Fatalf("Run = %v, want ErrLeaseLost", err)
	}
	<-s.Done()
	if err := s.Err(); !errors.Is(err, discovery.ErrLeaseLost) {
		t.Errorf("Err = %v, want ErrLeaseLost", err)
	}
}
