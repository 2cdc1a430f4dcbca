package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// waitFunc is a readiness made of a function.
type waitFunc func(ctx context.Context) error

func (f waitFunc) WaitReady(ctx context.Context) error { return f(ctx) }

// untilCancelled waits until ctx ends and fails with what, naming the
// cause, as the real waits do.
func untilCancelled(what string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		<-ctx.Done()
		return fmt.Errorf("%s: waiting: %w", what, context.Cause(ctx))
	}
}

func memRuntime(ctx context.Context) (*runtime.DistributedRuntime, error) {
	return runtime.New(ctx, runtime.Config{Discovery: runtime.DiscoveryMem, TCPHost: "127.0.0.1", SystemPort: runtime.SystemPortDisabled}, runtime.Deps{})
}

func noServe(context.Context, *runtime.DistributedRuntime, func(context.Context) error) error {
	return errors.New("serve must not run")
}

// When either wait fails, the other is given up and the error names both.
func TestConnectNamesBothWhenAWaitFails(t *testing.T) {
	t.Run("engine first", func(t *testing.T) {
		engine := waitFunc(func(context.Context) error {
			return errors.New("the vllm engine at http://x did not become ready within 1s")
		})
		newRuntime := func(ctx context.Context) (*runtime.DistributedRuntime, error) {
			return nil, untilCancelled("etcd at [unix:///etcd]")(ctx)
		}
		err := connect(t.Context(), engine, newRuntime, noServe)
		for _, want := range []string{"did not become ready within 1s", "etcd/NATS were not reached either", "etcd at [unix:///etcd]", errEngineGaveUp.Error()} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("connect: %v; want it to mention %q", err, want)
			}
		}
	})
	t.Run("runtime first", func(t *testing.T) {
		engine := waitFunc(untilCancelled("the vllm engine at http://x"))
		newRuntime := func(context.Context) (*runtime.DistributedRuntime, error) {
			return nil, errors.New("etcd at [unix:///etcd]: context deadline exceeded")
		}
		err := connect(t.Context(), engine, newRuntime, noServe)
		for _, want := range []string{"etcd at [unix:///etcd]", "the vllm engine at http://x", errRuntimeGaveUp.Error()} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("connect: %v; want it to mention %q", err, want)
			}
		}
	})
	t.Run("runtime fails, engine was ready", func(t *testing.T) {
		engine := waitFunc(func(context.Context) error { return nil })
		newRuntime := func(ctx context.Context) (*runtime.DistributedRuntime, error) {
			time.Sleep(50 * time.Millisecond) // the scenario: the engine answers first
			return nil, errors.New("etcd refused")
		}
		err := connect(t.Context(), engine, newRuntime, noServe)
		if err == nil || !strings.Contains(err.Error(), "etcd refused") || !strings.Contains(err.Error(), "the engine was ready") {
			t.Errorf("connect: %v", err)
		}
	})
}

// A runtime that is up before its engine serves at once (its lease kept
// alive), and the engine is waited for inside serve; a wait serve gives
// up on is joined before connect returns.
func TestConnectServesWhileTheEngineLoads(t *testing.T) {
	ready := make(chan struct{})
	engine := waitFunc(func(ctx context.Context) error {
		select {
		case <-ready:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	err := connect(t.Context(), engine, memRuntime, func(ctx context.Context, rt *runtime.DistributedRuntime, engineReady func(context.Context) error) error {
		defer rt.Close()
		close(ready) // the engine comes up only once the runtime serves
		return engineReady(ctx)
	})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	ended := make(chan struct{})
	engine = waitFunc(func(ctx context.Context) error {
		<-ctx.Done()
		close(ended)
		return errors.New("engine wait given up")
	})
	err = connect(ctx, engine, memRuntime, func(ctx context.Context, rt *runtime.DistributedRuntime, engineReady func(context.Context) error) error {
		defer rt.Close()
		cancel() // a signal while the engine loads
		return engineReady(ctx)
	})
	select {
	case <-ended:
	default:
		t.Error("connect returned before the engine's wait ended")
	}
	if err == nil {
		t.Error("connect: nil after the engine's wait was given up")
	}
}
