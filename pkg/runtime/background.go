package runtime

import (
	"context"
	"log/slog"
	"sync"
)

// background owns the runtime's long-lived goroutines (listeners, watchers,
// keep-alive). They all run under one context; stop cancels it and waits.
type background struct {
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

func newBackground(log *slog.Logger) *background {
	ctx, cancel := context.WithCancel(context.Background())
	return &background{log: log, ctx: ctx, cancel: cancel}
}

// goRun runs fn in a goroutine owned by b. It reports false, and runs
// nothing, once b is stopping.
func (b *background) goRun(name string, fn func(context.Context) error) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if err := fn(b.ctx); err != nil && b.ctx.Err() == nil {
			b.log.Error("runtime: background task failed", "task", name, "err", err)
		}
	}()
	return true
}

// stop cancels every task and waits for them.
func (b *background) stop() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
}
