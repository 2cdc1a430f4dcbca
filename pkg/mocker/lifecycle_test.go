package mocker

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

func TestStopEndsWithCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, nil)
		defer stopEngine(t, e)
		rc := runtime.NewContext(t.Context(), "req-1")
		defer rc.Release()
		var stoppedAt time.Time
		c := collector{onToken: func(n int) error {
			if n == 3 {
				rc.Stop()
				stoppedAt = time.Now()
			}
			return nil
		}}
		if err := e.Generate(rc, request(prompt(0, 100), 1000, 0), c.emit); err != nil {
			t.Fatal(err)
		}
		fin := c.terminal(t)
		if fin.FinishReason.Kind != backend.FinishCancelled || len(c.tokens()) != 3 {
			t.Errorf("finish %v after %d tokens, want cancelled after 3", fin.FinishReason, len(c.tokens()))
		}
		if fin.CompletionUsage == nil || fin.CompletionUsage.CompletionTokens != 3 {
			t.Errorf("usage %+v", fin.CompletionUsage)
		}
		if d := time.Since(stoppedAt); d != 0 {
			t.Errorf("stop took %v of simulated time", d)
		}
		if n := activeBlocks(e, 0); n != 0 {
			t.Errorf("%d blocks still active", n)
		}
	})
}

func TestKillReturnsPromptly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, nil)
		defer stopEngine(t, e)

		// Killed while emitting.
		rc := runtime.NewContext(t.Context(), "req-1")
		defer rc.Release()
		c := collector{onToken: func(n int) error {
			if n == 2 {
				rc.Kill()
			}
			return nil
		}}
		err := e.Generate(rc, request(prompt(0, 100), 1000, 0), c.emit)
		if !errors.Is(err, runtime.ErrKilled) || len(c.outs) != 2 {
			t.Errorf("err %v after %d outputs; want ErrKilled after 2 tokens", err, len(c.outs))
		}

		// Killed while waiting for the next pass (plain context).
		ctx, cancel := context.WithCancelCause(t.Context())
		cause := errors.New("client went away")
		errc := make(chan error)
		go func() { errc <- e.Generate(ctx, request(prompt(0, 100), 1000, 0), (&collector{}).emit) }()
		time.Sleep(50 * time.Millisecond)
		cancel(cause)
		synctest.Wait()
		select {
		case err := <-errc:
			if !errors.Is(err, cause) {
				t.Errorf("err %v, want the cause", err)
			}
		default:
			t.Fatal("Generate did not return at once")
		}
		if n := activeBlocks(e, 0); n != 0 {
			t.Errorf("%d blocks still active", n)
		}
	})
}

func TestEmitErrorStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, nil)
		defer stopEngine(t, e)
		boom := errors.New("boom")
		c := collector{onToken: func(n int) error {
			if n == 4 {
				return boom
			}
			return nil
		}}
		if err := e.Generate(t.Context(), request(prompt(0, 100), 1000, 0), c.emit); !errors.Is(err, boom) {
			t.Errorf("err %v, want boom", err)
		}
		if len(c.outs) != 4 || activeBlocks(e, 0) != 0 {
			t.Errorf("%d outputs, %d active blocks", len(c.outs), activeBlocks(e, 0))
		}
	})
}

func TestAbortCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, nil)
		defer stopEngine(t, e)
		rc := runtime.NewContext(t.Context(), "req-7")
		defer rc.Release()
		c := collector{onToken: func(n int) error {
			if n == 2 {
				e.Abort(rc, "req-7")
			}
			return nil
		}}
		if err := e.Generate(rc, request(prompt(0, 100), 1000, 0), c.emit); err != nil {
			t.Fatal(err)
		}
		if k := c.terminal(t).FinishReason.Kind; k != backend.FinishCancelled || len(c.tokens()) != 2 {
			t.Errorf("finish %v after %d tokens", k, len(c.tokens()))
		}
		e.Abort(rc, "unknown") // no effect
		if len(e.requests) != 0 || !e.IsQuiescent() {
			t.Error("request still registered")
		}
	})
}

func TestCleanup(t *testing.T) {
	// Without Start, twice.
	e := testEngine(t, nil)
	for range 2 {
		if err := e.Cleanup(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Start(t.Context(), 1); !errors.Is(err, backend.ErrEngineShutdown) {
		t.Errorf("Start after Cleanup: %v", err)
	}

	// With a request in flight.
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, nil)
		errc := make(chan error)
		go func() {
			errc <- e.Generate(context.Background(), request(prompt(0, 100), 1000, 0), (&collector{}).emit)
		}()
		time.Sleep(100 * time.Millisecond)
		stopEngine(t, e)
		stopEngine(t, e)
		if err := <-errc; !errors.Is(err, backend.ErrEngineShutdown) {
			t.Errorf("in-flight request: %v", err)
		}
	})
}

func TestStartupTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := testEngine(t, func(c *Config) { c.StartupTime = 3 * time.Second; c.DPSize = 2 })
		start := time.Now()
		cfg, err := e.Start(t.Context(), 9)
		if err != nil {
			t.Fatal(err)
		}
		defer stopEngine(t, e)
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("Start took %v", d)
		}
		want := backend.Config{Model: "mocker", ContextLength: 32768, KVBlockSize: 64, TotalKVBlocks: 16384,
			MaxNumSeqs: 256, MaxNumBatchedTokens: 8192, DataParallelSize: 2}
		if cfg.Model != want.Model || cfg.ContextLength != want.ContextLength || cfg.KVBlockSize != want.KVBlockSize ||
			cfg.TotalKVBlocks != want.TotalKVBlocks || cfg.MaxNumSeqs != want.MaxNumSeqs ||
			cfg.MaxNumBatchedTokens != want.MaxNumBatchedTokens || cfg.DataParallelSize != want.DataParallelSize {
			t.Errorf("config %+v, want %+v", cfg, want)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		e := testEngine(t, func(c *Config) { c.StartupTime = time.Hour })
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if _, err := e.Start(ctx, 9); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("cancelled Start: %v", err)
		}
		stopEngine(t, e)
	})
	synctest.Test(t, func(t *testing.T) {
		e := testEngine(t, func(c *Config) { c.StartupTime = time.Hour })
		errc := make(chan error)
		go func() { _, err := e.Start(context.Background(), 9); errc <- err }()
		time.Sleep(time.Second)
		stopEngine(t, e)
		if err := <-errc; !errors.Is(err, backend.ErrEngineShutdown) {
			t.Errorf("Start during Cleanup: %v", err)
		}
	})
}

func TestCachedPrefixShortensTTFT(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, nil)
		defer stopEngine(t, e)
		ttft := func() (time.Duration, int) {
			start := time.Now()
			var first time.Duration
			c := collector{onToken: func(n int) error {
				if n == 1 {
					first = time.Since(start)
				}
				return nil
			}}
			if err := e.Generate(t.Context(), request(prompt(5, 2048), 2, 0), c.emit); err != nil {
				t.Fatal(err)
			}
			return first, c.terminal(t).CompletionUsage.PromptTokensDetails.CachedTokens
		}
		cold, cachedCold := ttft()
		warm, cachedWarm := ttft()
		if cachedCold != 0 || cachedWarm != 2048 {
			t.Errorf("cached tokens %d then %d, want 0 then 2048", cachedCold, cachedWarm)
		}
		if cold < prefillTime(2048) || warm >= prefillTime(2048)/2 {
			t.Errorf("TTFT cold %v, warm %v; prefill of 2048 tokens is %v", cold, warm, prefillTime(2048))
		}
	})
}
