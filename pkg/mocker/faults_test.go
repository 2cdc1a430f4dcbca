package mocker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dynamo-go/dynamo/pkg/backend"
)

func TestFaultDrop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, func(c *Config) { c.DropAfterTokens = 5 })
		defer stopEngine(t, e)
		var c collector
		err := e.Generate(t.Context(), request(prompt(0, 100), 100, 0), c.emit)
		if !errors.Is(err, backend.ErrDropStream) || len(c.outs) != 5 {
			t.Errorf("err %v after %d outputs; want ErrDropStream after 5 tokens", err, len(c.outs))
		}
		// A shorter stream is not affected.
		c = collector{}
		if err := e.Generate(t.Context(), request(prompt(0, 100), 3, 0), c.emit); err != nil || len(c.tokens()) != 3 {
			t.Errorf("short stream: %v, %d tokens", err, len(c.tokens()))
		}
		if n := activeBlocks(e, 0); n != 0 {
			t.Errorf("%d blocks still active", n)
		}
	})
}

func TestFaultStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := startEngine(t, func(c *Config) { c.StallAfterTokens = 4 })
		defer stopEngine(t, e)
		ctx, cancel := context.WithCancel(t.Context())
		var c collector
		errc := make(chan error)
		go func() { errc <- e.Generate(ctx, request(prompt(0, 100), 100, 0), c.emit) }()
		time.Sleep(time.Hour)
		synctest.Wait()
		select {
		case err := <-errc:
			t.Fatalf("stalled Generate returned %v", err)
		default:
		}
		if len(c.outs) != 4 || activeBlocks(e, 0) != 0 {
			t.Errorf("stalled after %d outputs with %d active blocks", len(c.outs), activeBlocks(e, 0))
		}
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("err %v, want Canceled", err)
		}
	})
}

func TestFaultExit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var codes []int
		e, _ := startEngine(t, func(c *Config) {
			c.ExitAfterTokens = 15
			c.Exit = func(code int) { mu.Lock(); codes = append(codes, code); mu.Unlock() }
		})
		defer stopEngine(t, e)
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				if err := e.Generate(context.Background(), request(prompt(0, 10), 10, 0), (&collector{}).emit); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if len(codes) != 1 || codes[0] != 1 {
			t.Errorf("Exit calls %v, want one with code 1", codes)
		}
	})
}
