package gcfloor

import (
	"context"
	"log/slog"
	"runtime"
	"runtime/debug"
	"testing"
)

func TestPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name               string
		floor, live, roots uint64
		base, want         int
	}{
		{"a small heap: the heap minimum reaches the floor", 64 * mib, 2 * mib, 1 * mib, 100, 1600},
		{"a larger heap: the goal reaches it", 64 * mib, 20 * mib, 2 * mib, 100, 200},
		{"never below GOGC", 64 * mib, 40 * mib, 0, 100, 100},
		{"a heap above the floor keeps GOGC", 64 * mib, 200 * mib, 0, 50, 50},
		{"a GOGC above what the floor needs stays", 64 * mib, 16 * mib, 0, 400, 400},
		{"no collection yet", 64 * mib, 0, 0, 100, 100},
	} {
		got := percentFor(c.floor, c.live, c.roots, c.base)
		if got != c.want {
			t.Errorf("%s: percentFor(%d MiB, live %d, roots %d, base %d) = %d, want %d", c.name, c.floor/mib, c.live, c.roots, c.base, got, c.want)
		}
		// The goal as the runtime computes it reaches the floor, and one
		// point less would not.
		goal := func(p int) uint64 {
			return max(heapMinimum*uint64(p)/100, c.live+(c.live+c.roots)*uint64(p)/100)
		}
		if c.live > 0 && c.live < c.floor && got > c.base && (goal(got) < c.floor || goal(got-1) >= c.floor) {
			t.Errorf("%s: percentage %d gives a goal of %d, %d at one less; the floor is %d", c.name, got, goal(got), goal(got-1), c.floor)
		}
	}
}

func TestMiB(t *testing.T) {
	for in, want := range map[string]int{"": DefaultMiB, "0": 0, "128": 128} {
		if got, err := MiB(in); err != nil || got != want {
			t.Errorf("MiB(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"-1", "64MiB", "x"} {
		if _, err := MiB(in); err == nil {
			t.Errorf("MiB(%q) accepted", in)
		}
	}
}

// Run raises the GC percentage of a process with a small heap after a
// collection, and gives GOGC's back when it ends.
func TestRunRaisesThePercentageAndRestoresIt(t *testing.T) {
	defer func(p int) { startPercent = p }(startPercent)
	startPercent = 100 // as with GOGC unset, whatever this test's environment says
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, 1<<10, slog.New(slog.DiscardHandler)) }() // a 1 GiB floor
	for i := 0; percent() == 100; i++ {
		if i == 1000 {
			t.Fatal("the GC percentage is still 100 after 1000 collections")
		}
		runtime.GC() // each one signals Run
		runtime.Gosched()
	}
	if p := percent(); p < 1000 {
		t.Fatalf("GC percentage %d with a 1 GiB floor and a heap of a few MiB", p)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if p := percent(); p != 100 {
		t.Fatalf("GC percentage %d after Run ended, want GOGC's 100", p)
	}
}

// With a floor of 0 or GOGC=off, Run leaves the percentage alone.
func TestRunOff(t *testing.T) {
	defer func(p int) { startPercent = p }(startPercent)
	base := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(base)
	startPercent = -1 // as with GOGC=off
	if err := Run(context.Background(), 64, slog.New(slog.DiscardHandler)); err != nil || percent() != -1 {
		t.Fatalf("GOGC=off: Run = %v, percentage %d", err, percent())
	}
	startPercent = 100
	debug.SetGCPercent(100)
	if err := Run(context.Background(), 0, slog.New(slog.DiscardHandler)); err != nil || percent() != 100 {
		t.Fatalf("floor 0: Run = %v, percentage %d", err, percent())
	}
}

func percent() int { return int(int64(readUint(gogcMetric))) }
