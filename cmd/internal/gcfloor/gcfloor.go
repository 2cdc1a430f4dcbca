// Package gcfloor keeps the Go garbage collector from running over and
// over on a small heap, for the long-running binaries in cmd/.
//
// A serving process keeps little alive (a frontend with two workers: about
// 2 MB) and allocates per request. With Go's default (GOGC=100, and a
// 4 MB floor) it then collects many times a second: 8 times a second at
// 500 requests/s on a frontend, each cycle a few milliseconds of stopped
// or slowed requests, which is where the slowest 1 % of requests come
// from. A floor of a few tens of megabytes makes that a cycle every
// second or two, at the cost of that much memory. (A larger one costs
// where the live heap is tens of megabytes already: a long
// conversation's turns went 8-12 % slower with 64 MiB, none with 32 MiB,
// docs/benchmarks.md.) Once the live heap is large,
// the floor is moot and GOGC works as set.
package gcfloor

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
)

// Env is the variable that sets the floor in MiB: the heap size below
// which the collector does not run (0: off, GOGC alone decides).
const Env = "DYN_GC_MIN_HEAP_MIB"

// DefaultMiB is the floor when Env is unset.
const DefaultMiB = 32

// EnvHelp documents Env, for a command's --help.
const EnvHelp = "  " + Env + "                 below this heap size (MiB) the Go collector does not run (32; 0: GOGC alone)\n"

// MiB returns the floor Env asks for, in MiB: DefaultMiB when it is
// unset, and an error for anything but a non-negative integer.
func MiB(value string) (int, error) {
	if value == "" {
		return DefaultMiB, nil
	}
	n, err := strconv.Atoi(value)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q: want a whole number of MiB (0: off)", Env, value)
	}
	return n, nil
}

// Run keeps the collector's heap goal at floorMiB or more until ctx ends:
// after every collection it sets the GC percentage so that the next goal
// is the floor when the live heap is small, and leaves GOGC's own
// percentage when it is not. At the end it restores GOGC's percentage.
// A floor of 0, or GOGC=off, does nothing. It returns nil.
func Run(ctx context.Context, floorMiB int, log *slog.Logger) error {
	base := startPercent
	if floorMiB <= 0 || base < 0 || ctx.Err() != nil {
		return nil
	}
	floor := uint64(floorMiB) << 20
	cycles := make(chan struct{}, 1)
	var stopped atomic.Bool
	watchCycles(cycles, &stopped)
	defer func() {
		stopped.Store(true)
		debug.SetGCPercent(base)
	}()
	log.Debug("gc floor: on", "min_heap_mib", floorMiB, "gogc", base)
	set := base
	for {
		if p := percentFor(floor, readUint(liveMetric), readUint(stackMetric)+readUint(globalsMetric), base); p != set {
			debug.SetGCPercent(p)
			set = p
		}
		select {
		case <-ctx.Done():
			return nil
		case <-cycles:
		}
	}
}

// startPercent is the GC percentage the process started with (GOGC; -1:
// off), read before any Run changes it: several Runs in one process (a
// test's) all restore it.
var startPercent = int(int64(readUint(gogcMetric)))

// percentFor is the smallest GC percentage that makes the next heap goal
// at least floor, given the live heap and the other roots the collector
// counts (goroutine stacks, globals). Go's goal is the larger of
// live + (live + roots) × GOGC / 100 and its heap minimum, 4 MiB × GOGC /
// 100. It is never below base, GOGC's own, and it is base until a
// collection has measured the live heap.
func percentFor(floor, live, roots uint64, base int) int {
	if live == 0 || live >= floor {
		return base // no collection yet, or no need
	}
	byGoal := math.Ceil(float64(floor-live) * 100 / float64(live+roots))
	byMinimum := math.Ceil(float64(floor) * 100 / heapMinimum)
	return max(base, int(min(byGoal, byMinimum, math.MaxInt32)))
}

// heapMinimum is the Go runtime's heap goal at GOGC=100 for a small heap
// (runtime.defaultHeapMinimum); it scales with GOGC.
const heapMinimum = 4 << 20

// watchCycles signals cycles after every garbage collection until stopped:
// an object with a cleanup is dropped, its cleanup (run after the
// collection that freed it) signals and drops another one.
func watchCycles(cycles chan<- struct{}, stopped *atomic.Bool) {
	runtime.AddCleanup(new(sentinel), func(struct{}) {
		if stopped.Load() {
			return
		}
		select {
		case cycles <- struct{}{}:
		default:
		}
		watchCycles(cycles, stopped)
	}, struct{}{})
}

// sentinel is large enough not to share an allocation with anything else
// (the tiny allocator batches pointer-free objects under 16 bytes).
type sentinel struct{ _ [64]byte }

const (
	gogcMetric    = "/gc/gogc:percent"
	liveMetric    = "/gc/heap/live:bytes"
	stackMetric   = "/gc/scan/stack:bytes"
	globalsMetric = "/gc/scan/globals:bytes"
)

func readUint(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
