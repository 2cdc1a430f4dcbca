// Package runtimetest runs distributed runtimes for tests of the packages
// built on pkg/runtime, as net/http/httptest runs servers.
package runtimetest

import (
	"context"
	"testing"

	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// Start builds a distributed runtime from cfg and deps and runs it
// until the test ends: its cleanup stops Run (the ordered shutdown) and
// waits for it.
func Start(t testing.TB, cfg runtime.Config, deps runtime.Deps) *runtime.DistributedRuntime {
	t.Helper()
	rt, err := runtime.New(t.Context(), cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = rt.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return rt
}
