package rungroup

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// journal records the order in which owners stop.
type journal struct {
	mu      sync.Mutex
	stopped []string
}

// owner blocks until its context ends, then records its name.
func (j *journal) owner(name string) Owner {
	return func(ctx context.Context) error {
		<-ctx.Done()
		j.mu.Lock()
		j.stopped = append(j.stopped, name)
		j.mu.Unlock()
		return nil
	}
}

func TestOwnersStopLastFirst(t *testing.T) {
	var j journal
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, j.owner("runtime"), j.owner("models"), j.owner("http")) }()
	time.Sleep(10 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if want := []string{"http", "models", "runtime"}; !slices.Equal(j.stopped, want) {
		t.Errorf("stopped in order %v, want %v", j.stopped, want)
	}
}

func TestAFailureStopsTheRestAndIsReturned(t *testing.T) {
	var j journal
	boom := errors.New("lease lost")
	fail := func(context.Context) error { return boom }
	err := Run(context.Background(), j.owner("a"), fail, j.owner("b"))
	if !errors.Is(err, boom) || err.Error() != boom.Error() {
		t.Fatalf("Run = %v, want the failure alone", err)
	}
	if want := []string{"b", "a"}; !slices.Equal(j.stopped, want) {
		t.Errorf("stopped %v, want %v", j.stopped, want)
	}
}

// When a dependency fails and a dependent fails with it (the worker sees
// its runtime's store close), the dependency's error comes first,
// whichever arrived first.
func TestADependencysFailureLeadsItsEcho(t *testing.T) {
	boom := errors.New("runtime: status server: address in use")
	echo := errors.New("worker: store closed")
	for range 20 {
		gone := make(chan struct{})
		runtime := func(context.Context) error { close(gone); time.Sleep(time.Millisecond); return boom }
		worker := func(context.Context) error { <-gone; return echo }
		err := Run(context.Background(), runtime, worker)
		if want := boom.Error() + "\n" + echo.Error(); err == nil || err.Error() != want {
			t.Fatalf("Run = %q, want %q", err, want)
		}
	}
}

func TestAnOwnerThatFinishesLeavesTheOthersRunning(t *testing.T) {
	var j journal
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, j.owner("a"), func(context.Context) error { close(finished); return nil })
	}()
	<-finished
	select {
	case err := <-done:
		t.Fatalf("Run returned %v after one owner finished cleanly", err)
	case <-time.After(20 * time.Millisecond):
	}
	cancel()
	if err := <-done; err != nil || len(j.stopped) != 1 {
		t.Fatalf("Run = %v, stopped %v", err, j.stopped)
	}
}

func TestOwnersSeeTheGroupContextValues(t *testing.T) {
	type key struct{}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	cancel()
	var got any
	_ = Run(ctx, func(ctx context.Context) error { got = ctx.Value(key{}); <-ctx.Done(); return nil })
	if got != "v" {
		t.Errorf("owner saw value %v", got)
	}
}
