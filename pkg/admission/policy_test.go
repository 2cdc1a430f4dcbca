package admission

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// Each policy serves the same waiting requests in its own order: fcfs by
// arrival less the priority jump, lcfs the latest first (a jump still
// moves a request ahead), wspt by (1 + jump) / prompt tokens.
func TestPolicyOrder(t *testing.T) {
	// Queued in this order: tag, prompt tokens, priority jump (s).
	queued := []struct {
		tag  uint32
		isl  int
		jump float64
	}{{1, 100, 0}, {2, 10, 0}, {3, 1000, 5}, {4, 50, 0}, {5, 10, 1}}
	for _, c := range []struct {
		policy string
		want   []uint32
	}{
		// fcfs: 3 and 5 jump ahead of the earlier plain ones (5 s and 1 s).
		{PolicyFCFS, []uint32{3, 5, 1, 2, 4}},
		{"", []uint32{3, 5, 1, 2, 4}},
		// lcfs: latest first; 3's 5 s jump puts it before 5, whose 1 s
		// jump puts it before 4.
		{PolicyLCFS, []uint32{3, 5, 4, 2, 1}},
		// wspt: 5 (2/10), 2 (1/10), 4 (1/50), 1 (1/100), 3 (6/1000).
		{PolicyWSPT, []uint32{5, 2, 4, 1, 3}},
	} {
		t.Run(fmt.Sprintf("%q", c.policy), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFixture(t, []uint64{1}, Config{QueueMax: 10, Capacity: 1, Policy: c.policy})
				f.send(100, 0, false)
				synctest.Wait()
				for _, q := range queued {
					time.Sleep(100 * time.Millisecond)
					f.sendPrompt(q.tag, q.jump, false, q.isl)
					synctest.Wait()
				}
				prev := uint32(100)
				for range queued {
					f.end(prev, nil)
					synctest.Wait()
					s := f.next.started()
					prev = s[len(s)-1]
				}
				if got := f.next.started()[1:]; !equalTags(got, c.want) {
					t.Errorf("served %v, want %v", got, c.want)
				}
				f.finish()
			})
		})
	}
}

// The token rule (--router-queue-threshold): a worker whose prompt
// tokens in flight, not yet prefilled, exceed the budget is saturated
// whatever its request count; it has room again when they are prefilled.
func TestTokenBudgetSaturates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, []uint64{1}, Config{QueueMax: 4, TokenBudget: 100})
		hold := make(chan struct{})
		f.next.prefillGate = hold // first outputs wait for the test
		f.sendPrompt(1, 0, false, 150)
		synctest.Wait()
		f.sendPrompt(2, 0, false, 10)
		synctest.Wait()
		if got := f.next.started(); !equalTags(got, []uint32{1}) {
			t.Fatalf("started %v while worker 1 has 150 prompt tokens in prefill (budget 100), want [1]", got)
		}
		if v := testutil.ToFloat64(f.stage.cfg.Metrics.saturated); v != 1 {
			t.Errorf("saturated workers gauge %v, want 1", v)
		}
		close(hold) // request 1's first output: its tokens are prefilled
		synctest.Wait()
		if got := f.next.started(); !equalTags(got, []uint32{1, 2}) {
			t.Fatalf("started %v once the prefill completed, want [1 2]", got)
		}
		f.finish()
	})
}

// A worker that refuses a request before it started (full, or too slow
// to accept it) does not fail it: the request waits again and goes to a
// worker with room, within its queue timeout.
func TestWorkerRefusalRequeues(t *testing.T) {
	for _, c := range []struct {
		err    error
		reason string
	}{
		{runtime.NewError(runtime.TypeResourceExhausted, "worker queue is full"), ReasonWorkerFull},
		{fmt.Errorf("%w: %w", runtime.ErrAckTimeout, runtime.NewError(runtime.TypeWorkerOverloaded, "no ack")), ReasonAckTimeout},
	} {
		t.Run(c.reason, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFixture(t, []uint64{1, 2}, Config{QueueMax: 4, Capacity: 2})
				refused := 0
				f.next.refuse = func(w uint64) error {
					if w == 1 && refused == 0 {
						refused++
						f.next.markRefusing(1)
						return c.err
					}
					return nil
				}
				f.send(1, 0, false)
				synctest.Wait()
				time.Sleep(DefaultRecheck)
				synctest.Wait()
				if err, done := f.result(1); done {
					t.Fatalf("the refused request ended: %v", err)
				}
				if c := f.next.call(1); len(f.next.started()) != 2 || f.next.lastWorker() != 2 || c == nil {
					t.Fatalf("%d calls, want the request sent again, to worker 2", len(f.next.started()))
				}
				if v := testutil.ToFloat64(f.stage.cfg.Metrics.requeued.WithLabelValues("m", c.reason)); v != 1 {
					t.Errorf("requeued{reason=%q} = %v, want 1", c.reason, v)
				}
				f.finish()
				if err, _ := f.result(1); err != nil {
					t.Errorf("the request = %v, want served by worker 2", err)
				}
			})
		})
	}
}

// Without a queue, or once its queue timeout is spent, a request a worker
// refused is refused, counted under the worker's reason.
func TestWorkerRefusalWithoutQueueRefuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, []uint64{1}, Config{QueueMax: 0, Capacity: 2})
		full := runtime.NewError(runtime.TypeResourceExhausted, "worker queue is full")
		f.next.refuse = func(uint64) error { return full }
		f.send(1, 0, false)
		synctest.Wait()
		err, _ := f.result(1)
		var re *RefusedError
		if !errors.As(err, &re) || re.Reason != ReasonWorkerFull || !errors.Is(err, runtime.ErrResourceExhausted) || !errors.Is(err, ErrRefused) {
			t.Fatalf("got %v, want a worker_full refusal wrapping the worker's error", err)
		}
		if v := testutil.ToFloat64(f.stage.cfg.Metrics.refused.WithLabelValues("m", ReasonWorkerFull)); v != 1 {
			t.Errorf("worker_full refusals %v, want 1", v)
		}
		if v := testutil.ToFloat64(f.stage.cfg.Metrics.requeued.WithLabelValues("m", ReasonWorkerFull)); v != 0 {
			t.Errorf("worker_full requeues %v without a queue, want 0", v)
		}
		f.finish()
	})
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, []uint64{1}, Config{QueueMax: 4, Capacity: 2, QueueTimeout: time.Second})
		busy := runtime.NewError(runtime.TypeWorkerOverloaded, "all workers are busy")
		f.next.refuse = func(uint64) error { return busy }
		f.send(1, 0, false)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		err, _ := f.result(1)
		var re *RefusedError
		if !errors.As(err, &re) || re.Reason != ReasonWorkersBusy || re.Waited < time.Second || re.Waited > time.Second+DefaultRecheck {
			t.Fatalf("got %v (waited %v), want a workers_busy refusal once the 1 s queue timeout from its arrival is spent", err, re.Waited)
		}
		if n := len(f.next.started()); n < 5 {
			t.Errorf("%d attempts in a second, want one every recheck (%v)", n, DefaultRecheck)
		}
		f.finish()
	})
}
