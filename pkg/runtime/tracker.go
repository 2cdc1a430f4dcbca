package runtime

import (
	"sync"
	"time"
)

// tracker counts served endpoints so that shutdown can wait for them to
// drain (the reference system's GracefulShutdownTracker).
type tracker struct {
	mu     sync.Mutex
	closed bool
	n      int
	zero   chan struct{}
}

func newTracker() *tracker { return &tracker{zero: make(chan struct{})} }

// add counts one more endpoint; false once shutdown has begun waiting.
func (t *tracker) add() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.n++
	return true
}

func (t *tracker) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.n == 0 && t.closed {
		close(t.zero)
	}
}

// wait refuses new endpoints and waits up to timeout for the count to
// reach zero.
func (t *tracker) wait(timeout time.Duration) bool {
	t.mu.Lock()
	if !t.closed {
		t.closed = true
		if t.n == 0 {
			close(t.zero)
		}
	}
	t.mu.Unlock()
	select {
	case <-t.zero:
		return true
	case <-time.After(timeout):
		return false
	}
}
