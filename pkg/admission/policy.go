package admission

import (
	"container/heap"
	"time"
)

// Queue policies (Config.Policy), the reference router's
// --router-queue-policy (spec kvrouter_mocker.md §4.6).
const (
	// PolicyFCFS serves the earliest effective arrival first: arrival
	// time less the request's priority jump. Best for tail latency: no
	// request waits much longer than those that came with it.
	PolicyFCFS = "fcfs"
	// PolicyLCFS serves the latest effective arrival first (arrival plus
	// the priority jump): for experiments; it starves the oldest
	// requests under a standing overload.
	PolicyLCFS = "lcfs"
	// PolicyWSPT (weighted shortest processing time) serves the highest
	// (1 + priority jump in seconds) / prompt tokens first, earliest
	// arrival among equals: short prompts go first, which lowers the mean
	// time to first token at the expense of long ones.
	PolicyWSPT = "wspt"
)

// Policies lists the valid Config.Policy values.
var Policies = []string{PolicyFCFS, PolicyLCFS, PolicyWSPT}

// orderOf returns the queue key of a policy: the smallest key goes first.
func orderOf(policy string) func(*waiter) float64 {
	switch policy {
	case PolicyLCFS:
		return func(w *waiter) float64 { return -seconds(w.arrival) - w.jump.Seconds() }
	case PolicyWSPT:
		return func(w *waiter) float64 { return -(1 + w.jump.Seconds()) / float64(max(1, w.isl)) }
	}
	return func(w *waiter) float64 { return seconds(w.arrival) - w.jump.Seconds() }
}

// seconds is t in seconds since the Unix epoch, to the microsecond (a
// float64 holds that exactly for centuries).
func seconds(t time.Time) float64 { return float64(t.UnixMicro()) / 1e6 }

// waitQueue is a min-heap of waiters by key, then arrival order.
type waitQueue []*waiter

func (q waitQueue) Len() int { return len(q) }
func (q waitQueue) Less(i, j int) bool {
	if q[i].key != q[j].key {
		return q[i].key < q[j].key
	}
	return q[i].seq < q[j].seq
}
func (q waitQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}

// Push and Pop are for container/heap; use push, pop and remove.
func (q *waitQueue) Push(x any) {
	w := x.(*waiter)
	w.index = len(*q)
	*q = append(*q, w)
}

func (q *waitQueue) Pop() any {
	old := *q
	w := old[len(old)-1]
	old[len(old)-1] = nil
	w.index = -1
	*q = old[:len(old)-1]
	return w
}

func (q *waitQueue) push(w *waiter)   { heap.Push(q, w) }
func (q *waitQueue) pop() *waiter     { return heap.Pop(q).(*waiter) }
func (q *waitQueue) remove(w *waiter) { heap.Remove(q, w.index) }
