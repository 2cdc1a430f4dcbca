// Package rungroup runs the long-lived owners of a process together and
// stops them in order: the composition pattern every binary in cmd/ uses.
//
// An owner is a blocking Run(ctx) error: it returns nil once its context
// ends and it has stopped, or an error when it fails. Owners are listed in
// dependency order, what others depend on first (the runtime before the
// model registry before the HTTP server). All start at once; when the
// group's context ends or an owner fails, they are stopped from the last
// to the first, each only after every later one has returned, so that
// the HTTP server drains its streams while the runtime still carries
// them.
package rungroup

import (
	"context"
	"errors"
)

// Owner is one long-lived part of a process.
type Owner func(ctx context.Context) error

// Run starts every owner on its own goroutine and waits until ctx ends or
// an owner returns an error (an owner that returns nil before it was asked
// to stop has simply finished). Then it stops the others in reverse order
// and waits for all of them.
//
// It returns nil when every owner returned nil, else the owners' errors
// joined in list order: dependencies come first in the list, so a root
// cause (the runtime lost its lease) leads its dependents' echoes of it
// (the registry's watch ended). The owners' contexts carry ctx's values
// but end only when Run stops them.
func Run(ctx context.Context, owners ...Owner) error {
	type exit struct {
		i   int
		err error
	}
	n := len(owners)
	exits := make(chan exit, n)
	stops := make([]context.CancelFunc, n)
	for i, run := range owners {
		octx, stop := context.WithCancel(context.WithoutCancel(ctx))
		stops[i] = stop
		go func() { exits <- exit{i, run(octx)} }()
	}
	done := make([]bool, n)
	errs := make([]error, n)
	record := func(e exit) {
		done[e.i], errs[e.i] = true, e.err
	}
	for running := n; running > 0; running-- {
		select {
		case <-ctx.Done():
			running = 0
		case e := <-exits:
			record(e)
			if e.err != nil {
				running = 0
			}
		}
	}
	for i := n - 1; i >= 0; i-- {
		stops[i]()
		for !done[i] {
			record(<-exits)
		}
	}
	return errors.Join(errs...)
}
