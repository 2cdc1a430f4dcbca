package discovery

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// life is the lifecycle shared by the stores: the Done channel and its
// error, a context that ends when the store stops, and the goroutines the
// store owns (one per watch), which stop waits for.
type life struct {
	created time.Time
	ctx     context.Context // ends when the store stops
	cancel  context.CancelFunc
	done    chan struct{}

	mu      sync.Mutex
	err     error // ErrLeaseLost or ErrClosed once done is closed
	stopped bool  // ctx cancelled; no new goroutines
	wg      sync.WaitGroup
}

func newLife() *life {
	ctx, cancel := context.WithCancel(context.Background())
	return &life{created: time.Now(), ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// Connectivity is that of a store with no remote service (file, mem):
// connected since it was made. The etcd store has its own.
func (l *life) Connectivity() Connectivity {
	return Connectivity{Connected: true, Since: l.created}
}

// Done is closed when the liveness is lost or the store is stopped.
func (l *life) Done() <-chan struct{} { return l.done }

// Err returns the reason Done was closed, or nil.
func (l *life) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// check returns the reason Done was closed, wrapped for op, or nil.
func (l *life) check(op string) error {
	if err := l.Err(); err != nil {
		return fmt.Errorf("%w: %s", err, op)
	}
	return nil
}

// lose closes Done with ErrLeaseLost unless it is already closed. It reports
// whether it closed Done.
func (l *life) lose() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return false
	}
	l.err = ErrLeaseLost
	close(l.done)
	return true
}

// stop closes Done with ErrClosed (unless it is already closed) and cancels
// ctx, which ends every goroutine the store owns. It reports whether this
// call was the first one; only the first caller should release resources.
// It does not wait; see wait.
func (l *life) stop() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return false
	}
	l.stopped = true
	if l.err == nil {
		l.err = ErrClosed
		close(l.done)
	}
	l.cancel()
	return true
}

// wait returns when every goroutine started with goWatch has returned.
func (l *life) wait() { l.wg.Wait() }

// goWatch runs f in a goroutine owned by the store with a context that ends
// when ctx ends or the store stops. It fails with ErrClosed once the store
// is stopped.
func (l *life) goWatch(ctx context.Context, f func(ctx context.Context)) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return ErrClosed
	}
	wctx, cancel := context.WithCancel(ctx)
	unlink := context.AfterFunc(l.ctx, cancel)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer cancel()
		defer unlink()
		f(wctx)
	}()
	return nil
}

// runContext returns a context for Run that also ends when the store stops.
func (l *life) runContext(ctx context.Context) (context.Context, context.CancelFunc) {
	rctx, cancel := context.WithCancel(ctx)
	unlink := context.AfterFunc(l.ctx, cancel)
	return rctx, func() { unlink(); cancel() }
}
