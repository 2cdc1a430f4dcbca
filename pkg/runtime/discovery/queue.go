package discovery

import (
	"context"
	"sync"
)

// queue is an unbounded FIFO of events for one watcher. Producers push
// without blocking (under their own locks); the watcher's goroutine drains
// the queue into the watch channel at the consumer's pace, so no event is
// dropped and no producer waits on a slow consumer.
type queue struct {
	mu     sync.Mutex
	items  []Event
	notify chan struct{} // capacity 1: "items is not empty"
}

func newQueue() *queue {
	return &queue{notify: make(chan struct{}, 1)}
}

// push appends ev. It never blocks.
func (q *queue) push(ev Event) {
	q.mu.Lock()
	q.items = append(q.items, ev)
	q.mu.Unlock()
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

// take removes and returns every queued event.
func (q *queue) take() []Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items
}

// drain delivers queued events to out, in order, until ctx ends.
func (q *queue) drain(ctx context.Context, out chan<- Event) {
	for {
		for _, ev := range q.take() {
			if !send(ctx, out, ev) {
				return
			}
		}
		select {
		case <-q.notify:
		case <-ctx.Done():
			return
		}
	}
}
