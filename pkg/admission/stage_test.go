package admission

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// call is one request the fake next stage holds open.
type call struct {
	tag    uint32 // the request's first token id
	worker uint64
	emit   func(*backend.Output) error
	end    chan error // the stream's result; closed or sent once
	ended  bool       // guarded by fakeNext.mu
}

// fakeNext stands for the chain below the stage, the push router's
// counting included: it places each request on the workers the stage
// finds unsaturated, in turn, counts it there (its prompt tokens until
// its first output), emits one output and holds the stream open until
// its call ends. It is also the stage's Workers.
type fakeNext struct {
	workers []uint64
	stage   *Stage
	// refuse, when set, makes a worker refuse requests with its error
	// before they start.
	refuse func(worker uint64) error
	// prefillGate, when set, holds every first output until it is
	// closed.
	prefillGate chan struct{}

	mu       sync.Mutex
	next     int
	calls    []*call
	requests map[uint64]int
	prefill  map[uint64]int
	busy     map[uint64]bool
	routed   int
}

func newFakeNext(ws []uint64) *fakeNext {
	return &fakeNext{workers: ws, requests: map[uint64]int{}, prefill: map[uint64]int{}, busy: map[uint64]bool{}}
}

func (f *fakeNext) Loads() ([]WorkerLoad, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]WorkerLoad, len(f.workers))
	for i, id := range f.workers {
		out[i] = WorkerLoad{ID: id, Requests: f.requests[id], PrefillTokens: f.prefill[id], Busy: f.busy[id]}
	}
	return out, f.routed
}

// markRefusing marks a worker busy, as the push router marks one that
// refused a request.
func (f *fakeNext) markRefusing(id uint64) {
	f.mu.Lock()
	f.busy[id] = true
	f.mu.Unlock()
}

// setBusy marks every worker busy (their published load) or not.
func (f *fakeNext) setBusy(on bool) {
	f.mu.Lock()
	for _, id := range f.workers {
		f.busy[id] = on
	}
	f.mu.Unlock()
}

func (f *fakeNext) count(worker uint64, requests, prefill int) {
	f.mu.Lock()
	f.requests[worker] += requests
	f.prefill[worker] += prefill
	f.routed += requests
	f.mu.Unlock()
}

func (f *fakeNext) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	ids := f.stage.Unsaturated(f.workers)
	f.mu.Lock()
	first := ids[f.next%len(ids)]
	c := &call{tag: req.TokenIDs[0], worker: first, emit: emit, end: make(chan error, 1)}
	f.next++
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	if f.refuse != nil {
		if err := f.refuse(first); err != nil {
			return err
		}
	}
	isl := len(req.TokenIDs)
	f.count(first, 1, isl)
	prefilled := false
	defer func() {
		f.mu.Lock()
		c.ended = true
		f.requests[c.worker]--
		if !prefilled {
			f.prefill[c.worker] -= isl
		}
		f.routed--
		f.mu.Unlock()
		f.stage.Kick()
	}()
	if f.prefillGate != nil {
		select {
		case <-f.prefillGate:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	f.count(first, 0, -isl) // the first output
	prefilled = true
	f.stage.Kick()
	if err := emit(&backend.Output{TokenIDs: []uint32{1}, Placement: &backend.Placement{WorkerID: first}}); err != nil {
		return err
	}
	select {
	case err := <-c.end:
		return err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// started returns the tags of the requests the fake received, in order.
func (f *fakeNext) started() []uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var tags []uint32
	for _, c := range f.calls {
		tags = append(tags, c.tag)
	}
	return tags
}

func (f *fakeNext) call(tag uint32) *call {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.calls {
		if c.tag == tag {
			return c
		}
	}
	return nil
}

// lastWorker is the worker of the latest call.
func (f *fakeNext) lastWorker() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[len(f.calls)-1].worker
}

func (f *fakeNext) workerOf(c *call) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return c.worker
}

// moveTo makes request tag's stream continue on another worker, as a
// migration below the stage does.
func (f *fakeNext) moveTo(tag uint32, id uint64) {
	c := f.call(tag)
	f.mu.Lock()
	if !c.ended {
		f.requests[c.worker]--
		f.requests[id]++
		c.worker = id
	}
	f.mu.Unlock()
	f.stage.Kick()
}

// fixture is a stage over a fake next stage, with requests running in
// goroutines of the test.
type fixture struct {
	t     *testing.T
	stage *Stage
	next  *fakeNext
	reg   *prometheus.Registry
	wg    sync.WaitGroup

	mu      sync.Mutex
	results map[uint32]error
	cancels map[uint32]context.CancelFunc
}

func newFixture(t *testing.T, ws []uint64, cfg Config) *fixture {
	reg := prometheus.NewRegistry()
	met, err := NewMetrics(reg, "dynamo_frontend")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model, cfg.Metrics = "m", met
	f := &fixture{t: t, next: newFakeNext(ws), reg: reg, results: map[uint32]error{}, cancels: map[uint32]context.CancelFunc{}}
	f.stage = New(f.next, cfg).Before(f.next)
	f.next.stage = f.stage
	return f
}

// send starts request tag with the given priority jump (seconds).
func (f *fixture) send(tag uint32, jumpSecs float64, pin bool) {
	f.sendPrompt(tag, jumpSecs, pin, 1)
}

// sendPrompt starts request tag with a prompt of isl tokens.
func (f *fixture) sendPrompt(tag uint32, jumpSecs float64, pin bool, isl int) {
	prompt := make([]uint32, isl)
	prompt[0] = tag
	req := &backend.Request{TokenIDs: prompt, Routing: &backend.Routing{}}
	if jumpSecs != 0 {
		req.Routing.PriorityJump = &jumpSecs
	}
	if pin {
		req.Routing.BackendInstanceID = backend.Ptr(uint64(1))
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.mu.Lock()
	f.cancels[tag] = cancel
	f.mu.Unlock()
	f.wg.Go(func() {
		defer cancel()
		err := f.stage.Generate(ctx, req, func(*backend.Output) error { return nil })
		f.mu.Lock()
		f.results[tag] = err
		f.mu.Unlock()
	})
}

func (f *fixture) result(tag uint32) (error, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	err, ok := f.results[tag]
	return err, ok
}

func (f *fixture) cancel(tag uint32) {
	f.mu.Lock()
	c := f.cancels[tag]
	f.mu.Unlock()
	c()
}

// end ends the stream of request tag with err.
func (f *fixture) end(tag uint32, err error) {
	f.t.Helper()
	c := f.next.call(tag)
	if c == nil {
		f.t.Fatalf("request %d was not sent on", tag)
	}
	c.end <- err
}

// finish ends every open stream, waits for every request, and checks
// that no count is left.
func (f *fixture) finish() {
	f.t.Helper()
	for {
		f.mu.Lock()
		all := len(f.results) == len(f.cancels)
		f.mu.Unlock()
		if all {
			break
		}
		f.next.mu.Lock()
		for _, c := range f.next.calls {
			select {
			case c.end <- nil:
			default:
			}
		}
		f.next.mu.Unlock()
		synctest.Wait()
	}
	f.wg.Wait()
	admitted, waiting := f.stage.Load()
	loads, routed := f.next.Loads()
	if admitted != 0 || waiting != 0 || routed != 0 {
		f.t.Errorf("left over: admitted %d, waiting %d, routed %d", admitted, waiting, routed)
	}
	for _, l := range loads {
		if l.Requests != 0 || l.PrefillTokens != 0 {
			f.t.Errorf("left over on worker %d: %+v", l.ID, l)
		}
	}
	if v := testutil.ToFloat64(f.stage.cfg.Metrics.pending); v != 0 {
		f.t.Errorf("pending gauge %v after the end", v)
	}
}

func equalTags(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestNoCapacityInfoNeverQueues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, []uint64{1, 2}, Config{QueueMax: 0})
		for i := range 50 {
			f.send(uint32(i+1), 0, false)
		}
		synctest.Wait()
		if n := len(f.next.started()); n != 50 {
			t.Fatalf("%d of 50 requests sent on; without capacity none waits", n)
		}
		f.finish()
	})
}

func TestOrderByPriorityThenArrival(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, []uint64{1}, Config{QueueMax: 10, Capacity: 1})
		f.send(100, 0, false)
		synctest.Wait()
		// Queued in this order: 1 and 2 plain, 3 with a 10 s jump, 4 plain,
		// 5 with a 5 s jump.
		for _, r := range []struct {
			tag  uint32
			jump float64
		}{{1, 0}, {2, 0}, {3, 10}, {4, 0}, {5, 5}} {
			time.Sleep(time.Millisecond)
			f.send(r.tag, r.jump, false)
			synctest.Wait()
		}
		if _, waiting := f.stage.Load(); waiting != 5 {
			t.Fatalf("%d waiting, want 5", waiting)
		}
		if v := testutil.ToFloat64(f.stage.cfg.Metrics.pending); v != 5 {
			t.Errorf("pending gauge %v, want 5", v)
		}
		if v := testutil.ToFloat64(f.stage.cfg.Metrics.saturated); v != 1 {
			t.Errorf("saturated workers gauge %v, want 1", v)
		}
		prev := uint32(100)
		for range 5 {
			f.end(prev, nil)
			synctest.Wait()
			s := f.next.started()
			prev = s[len(s)-1]
		}
		if got, want := f.next.started(), []uint32{100, 3, 5, 1, 2, 4}; !equalTags(got, want) {
			t.Errorf("served %v, want %v", got, want)
		}
		f.finish()
	})
}

func TestFullQueueRefusesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, []uint64{1}, Config{QueueMax: 1, Capacity: 1})
		f.send(1, 0, false)
		synctest.Wait()
		f.send(2, 0, false)
		synctest.Wait()
		start := time.Now()
		f.send(3, 0, false)
		synctest.Wait()
		err, done := f.result(3)
		var re *RefusedError
		if !done || !errors.As(err, &re) || re.Reason != ReasonQueueFull || re.Waiting != 1 || time.Since(start) != 0 {
			t.Fatalf("third request: done %v, %v; want a queue_full refusal at once", done, err)
		}
		if !errors.Is(err, ErrRefused) || !errors.Is(err, runtime.ErrWorkerOverloaded) || re.RetryAfter < time.Second {
			t.Errorf("%v: want ErrRefused, runtime.ErrWorkerOverloaded and a retry of at least 1 s (got %v)", err, re.RetryAfter)
		}
		if v := testutil.ToFloat64(f.stage.cfg.Metrics.refused.WithLabelValues("m", ReasonQueueFull)); v != 1 {
			t.Errorf("queue_full refusals %v, want 1", v)
		}
		f.finish()
		if err, _ := f.result(2); err != nil {
			t.Errorf("the queued request: %v", err)
		}
	})
}

func TestNoQueueRefusesWhenSaturated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, []uint64{1, 2}, Config{QueueMax: 0, WorkerLimit: 1})
		f.send(1, 0, false)
		f.send(2, 0, false)
		synctest.Wait()
		f.send(3, 0, false)
		synctest.Wait()
		if err, _ := f.result(3); !errors.Is(err, ErrRefused) {
			t.Fatalf("got %v, want a refusal", err)
		}
		f.finish()
	})
}

func TestTimeoutRefuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, []uint64{1}, Config{QueueMax: 4, Capacity: 1, QueueTimeout: 3 * time.Second})
		f.send(1, 0, false)
		synctest.Wait()
		start := time.Now()
		f.send(2, 0, false)
		synctest.Wait()
		time.Sleep(3*time.Second - time.Nanosecond)
		synctest.Wait()
		if _, done := f.result(2); done {
			t.Fatal("refused before the timeout")
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		err, _ := f.result(2)
		var re *RefusedError
		if !errors.As(err, &re) || re.Reason != ReasonQueueTimeout || re.Waited != time.Since(start) {
			t.Fatalf("got %v, want a queue_timeout refusal after 3 s", err)
		}
		if re.RetryAfter < time.Second || re.RetryAfter > 3*time.Second {
			t.Errorf("retry after %v, want 1-3 s", re.RetryAfter)
		}
		if v := testutil.ToFloat64(f.stage.cfg.Metrics.refused.WithLabelValues("m", ReasonQueueTimeout)); v != 1 {
			t.Errorf("queue_timeout refusals %v, want 1", v)
		}
		f.finish()
	})
}

func TestCancelWhileQueuedLeavesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, []uint64{1}, Config{QueueMax: 4, Capacity: 1})
		f.send(1, 0, false)
		synctest.Wait()
		f.send(2, 0, false)
		f.send(3, 0, false)
		synctest.Wait()
		start := time.Now()
		f.cancel(2)
		synctest.Wait()
		err, done := f.result(2)
		if !done || !errors.Is(err, context.Canceled) || time.Since(start) != 0 {
			t.Fatalf("cancelled request: done %v, %v", done, err)
		}
		if _, waiting := f.stage.Load(); waiting != 1 {
			t.Errorf("%d waiting, want 1", waiting)
		}
		f.end(1, nil)
		synctest.Wait()
		if got := f.next.started(); !equalTags(got, []uint32{1, 3}) {
			t.Errorf("served %v, want [1 3]: the cancelled request is never sent on", got)
		}
		f.finish()
	})
}

func TestSlotFreesWhenStreamEnds(t *testing.T) {
	for _, c := range []struct {
		name string
		end  func(f *fixture)
	}{
		{"ends", func(f *fixture) { f.end(1, nil) }},
		{"fails", func(f *fixture) { f.end(1, runtime.NewError(runtime.TypeDisconnected, "gone")) }},
		{"is cancelled", func(f *fixture) { f.cancel(1) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFixture(t, []uint64{1}, Config{QueueMax: 4, Capacity: 1})
				f.send(1, 0, false)
				synctest.Wait()
				f.send(2, 0, false)
				synctest.Wait()
				if got := f.next.started(); len(got) != 1 {
					t.Fatalf("started %v, want the first only", got)
				}
				c.end(f)
				synctest.Wait()
				if got := f.next.started(); !equalTags(got, []uint32{1, 2}) {
					t.Fatalf("started %v, want [1 2]", got)
				}
				f.finish()
			})
		})
	}
}

func TestMigrationMovesTheCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, []uint64{1, 2}, Config{QueueMax: 4, Capacity: 1})
		f.send(1, 0, false) // on worker 1
		synctest.Wait()
		f.send(2, 0, false) // on worker 2
		synctest.Wait()
		f.send(3, 0, false)
		synctest.Wait()
		if _, waiting := f.stage.Load(); waiting != 1 {
			t.Fatalf("%d waiting, want 1", waiting)
		}
		f.next.moveTo(1, 2) // request 1 migrates to worker 2: worker 1 has room
		synctest.Wait()
		if admitted, waiting := f.stage.Load(); admitted != 3 || waiting != 0 {
			t.Fatalf("after the migration: %d admitted, %d waiting; want 3 and 0", admitted, waiting)
		}
		if got := f.next.started(); !equalTags(got, []uint32{1, 2, 3}) {
			t.Errorf("started %v", got)
		}
		if c := f.next.call(3); c == nil || f.next.workerOf(c) != 1 {
			t.Errorf("request 3 went to worker %d, want 1, which the migration freed", c.worker)
		}
		f.finish()
	})
}

func TestPinnedRequestsAreNotQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, []uint64{1}, Config{QueueMax: 4, Capacity: 1})
		f.send(1, 0, false)
		synctest.Wait()
		f.send(2, 0, true)
		synctest.Wait()
		if got := f.next.started(); !equalTags(got, []uint32{1, 2}) {
			t.Fatalf("started %v, want the pinned request at once", got)
		}
		f.finish()
	})
}

// noWorkers is a model without available workers.
type noWorkers struct{}

func (noWorkers) Loads() ([]WorkerLoad, int) { return nil, 0 }

func TestNoWorkersIsNotOverload(t *testing.T) {
	noInstances := errors.New("router: no instances")
	next := backend.GeneratorFunc(func(context.Context, *backend.Request, func(*backend.Output) error) error { return noInstances })
	s := New(noWorkers{}, Config{Model: "m", QueueMax: 0, Capacity: 1}).Before(next)
	if err := s.Generate(context.Background(), &backend.Request{}, nil); !errors.Is(err, noInstances) {
		t.Fatalf("got %v, want the router's error", err)
	}
	if admitted, waiting := s.Load(); admitted != 0 || waiting != 0 {
		t.Errorf("left over: %d admitted, %d waiting", admitted, waiting)
	}
}

func TestBusyWorkersQueueUntilTheyRecover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, []uint64{1, 2}, Config{QueueMax: 4})
		f.next.setBusy(true)
		f.send(1, 0, false)
		synctest.Wait()
		if got := f.next.started(); len(got) != 0 {
			t.Fatalf("started %v while every worker is busy", got)
		}
		if v := testutil.ToFloat64(f.stage.cfg.Metrics.saturated); v != 2 {
			t.Errorf("saturated workers gauge %v, want 2", v)
		}
		f.next.setBusy(false)
		time.Sleep(DefaultRecheck)
		synctest.Wait()
		if got := f.next.started(); !equalTags(got, []uint32{1}) {
			t.Fatalf("started %v after the workers recovered", got)
		}
		f.finish()
	})
}

func TestUnsaturated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, []uint64{1, 2}, Config{QueueMax: 4, Capacity: 1})
		f.send(1, 0, false) // on worker 1
		synctest.Wait()
		if got := f.stage.Unsaturated([]uint64{1, 2}); !equalIDs(got, []uint64{2}) {
			t.Errorf("Unsaturated = %v, want [2]", got)
		}
		f.send(2, 0, false) // on worker 2
		synctest.Wait()
		if got := f.stage.Unsaturated([]uint64{1, 2}); !equalIDs(got, []uint64{1, 2}) {
			t.Errorf("Unsaturated = %v, want all when all are saturated", got)
		}
		f.finish()
	})
}

func equalIDs(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestManyConcurrentRequestsLeaveNoCount(t *testing.T) {
	f := newFixture(t, []uint64{1, 2, 3}, Config{QueueMax: 1000, Capacity: 2, QueueTimeout: 10 * time.Second})
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%4)*time.Millisecond+time.Millisecond)
			if i%2 == 0 {
				ctx, cancel = context.WithCancel(context.Background())
			}
			defer cancel()
			done := make(chan struct{})
			go func() { // the stream's end, once it started
				for {
					select {
					case <-done:
						return
					case <-time.After(time.Millisecond):
					}
					if c := f.next.call(uint32(i)); c != nil {
						time.Sleep(time.Duration(i%3) * time.Millisecond)
						if i%5 == 0 {
							f.next.moveTo(uint32(i), uint64(i%3+1)) // migrated
						}
						var err error
						if i%7 == 0 {
							err = errors.New("failed")
						}
						c.end <- err
						return
					}
				}
			}()
			_ = f.stage.Generate(ctx, &backend.Request{TokenIDs: []uint32{uint32(i)}}, func(*backend.Output) error { return nil })
			close(done)
		})
	}
	wg.Wait()
	if admitted, waiting := f.stage.Load(); admitted != 0 || waiting != 0 {
		t.Errorf("left over: %d admitted, %d waiting", admitted, waiting)
	}
	if _, routed := f.next.Loads(); routed != 0 {
		t.Errorf("left over: %d routed", routed)
	}
}
