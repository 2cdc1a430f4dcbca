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

// workers is a fixed worker list.
type workers []uint64

func (w workers) Available() []uint64 { return append([]uint64(nil), w...) }

// call is one request the fake next stage holds open.
type call struct {
	tag    uint32 // the request's first token id
	worker uint64
	emit   func(*backend.Output) error
	end    chan error // the stream's result; closed or sent once
}

// moveTo makes the call's stream continue on another worker, as a
// migration below the stage does.
func (c *call) moveTo(id uint64) {
	c.worker = id
	_ = c.emit(&backend.Output{TokenIDs: []uint32{2}, Placement: &backend.Placement{WorkerID: id}})
}

// fakeNext places each request on a worker in turn, emits one output
// and holds the stream open until its call ends.
type fakeNext struct {
	workers []uint64

	mu    sync.Mutex
	next  int
	calls []*call
}

func (f *fakeNext) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	f.mu.Lock()
	c := &call{tag: req.TokenIDs[0], worker: f.workers[f.next%len(f.workers)], emit: emit, end: make(chan error, 1)}
	f.next++
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	if err := emit(&backend.Output{TokenIDs: []uint32{1}, Placement: &backend.Placement{WorkerID: c.worker}}); err != nil {
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

func newFixture(t *testing.T, ws workers, cfg Config) *fixture {
	reg := prometheus.NewRegistry()
	met, err := NewMetrics(reg, "dynamo_frontend")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model, cfg.Metrics = "m", met
	f := &fixture{t: t, next: &fakeNext{workers: ws}, reg: reg, results: map[uint32]error{}, cancels: map[uint32]context.CancelFunc{}}
	f.stage = New(f.next, ws, cfg)
	return f
}

// send starts request tag with the given priority jump (seconds).
func (f *fixture) send(tag uint32, jumpSecs float64, pin bool) {
	req := &backend.Request{TokenIDs: []uint32{tag}, Routing: &backend.Routing{}}
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
	inflight, unplaced, waiting := f.stage.Load()
	if len(inflight) != 0 || unplaced != 0 || waiting != 0 {
		f.t.Errorf("left over: in flight %v, unplaced %d, waiting %d", inflight, unplaced, waiting)
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
		f := newFixture(t, workers{1, 2}, Config{QueueMax: 0})
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
		f := newFixture(t, workers{1}, Config{QueueMax: 10, Capacity: 1})
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
		if _, _, waiting := f.stage.Load(); waiting != 5 {
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
		f := newFixture(t, workers{1}, Config{QueueMax: 1, Capacity: 1})
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
		f := newFixture(t, workers{1, 2}, Config{QueueMax: 0, WorkerLimit: 1})
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
		f := newFixture(t, workers{1}, Config{QueueMax: 4, Capacity: 1, QueueTimeout: 3 * time.Second})
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
		f := newFixture(t, workers{1}, Config{QueueMax: 4, Capacity: 1})
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
		if _, _, waiting := f.stage.Load(); waiting != 1 {
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
				f := newFixture(t, workers{1}, Config{QueueMax: 4, Capacity: 1})
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
		f := newFixture(t, workers{1, 2}, Config{QueueMax: 4, Capacity: 1})
		f.send(1, 0, false) // on worker 1
		synctest.Wait()
		f.send(2, 0, false) // on worker 2
		synctest.Wait()
		f.send(3, 0, false)
		synctest.Wait()
		if in, _, waiting := f.stage.Load(); in[1] != 1 || in[2] != 1 || waiting != 1 {
			t.Fatalf("in flight %v, waiting %d", in, waiting)
		}
		f.next.call(1).moveTo(2) // request 1 migrates to worker 2: worker 1 has room
		synctest.Wait()
		in, unplaced, waiting := f.stage.Load()
		if in[1] != 1 || in[2] != 2 || unplaced != 0 || waiting != 0 {
			t.Fatalf("after the migration: in flight %v, unplaced %d, waiting %d; want 1:1 2:2", in, unplaced, waiting)
		}
		if got := f.next.started(); !equalTags(got, []uint32{1, 2, 3}) {
			t.Errorf("started %v", got)
		}
		f.finish()
	})
}

func TestPinnedRequestsAreNotQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, workers{1}, Config{QueueMax: 4, Capacity: 1})
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

func TestNoWorkersIsNotOverload(t *testing.T) {
	noInstances := errors.New("router: no instances")
	next := backend.GeneratorFunc(func(context.Context, *backend.Request, func(*backend.Output) error) error { return noInstances })
	s := New(next, workers{}, Config{Model: "m", QueueMax: 0, Capacity: 1})
	if err := s.Generate(context.Background(), &backend.Request{}, nil); !errors.Is(err, noInstances) {
		t.Fatalf("got %v, want the router's error", err)
	}
	if in, unplaced, waiting := s.Load(); len(in) != 0 || unplaced != 0 || waiting != 0 {
		t.Errorf("left over: %v %d %d", in, unplaced, waiting)
	}
}

// busy is a BusyChecker the test flips.
type busy struct {
	mu sync.Mutex
	on bool
}

func (b *busy) Busy(uint64) bool { b.mu.Lock(); defer b.mu.Unlock(); return b.on }
func (b *busy) set(on bool)      { b.mu.Lock(); b.on = on; b.mu.Unlock() }

func TestBusyWorkersQueueUntilTheyRecover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &busy{on: true}
		f := newFixture(t, workers{1, 2}, Config{QueueMax: 4, Busy: b})
		f.send(1, 0, false)
		synctest.Wait()
		if got := f.next.started(); len(got) != 0 {
			t.Fatalf("started %v while every worker is busy", got)
		}
		if v := testutil.ToFloat64(f.stage.cfg.Metrics.saturated); v != 2 {
			t.Errorf("saturated workers gauge %v, want 2", v)
		}
		b.set(false)
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
		f := newFixture(t, workers{1, 2}, Config{QueueMax: 4, Capacity: 1})
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
	ws := workers{1, 2, 3}
	next := backend.GeneratorFunc(func(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
		id := ws[int(req.TokenIDs[0])%len(ws)]
		for i := range 3 {
			if i == 2 && req.TokenIDs[0]%5 == 0 {
				id = ws[(int(req.TokenIDs[0])+1)%len(ws)] // migrated
			}
			if err := emit(&backend.Output{Placement: &backend.Placement{WorkerID: id}}); err != nil {
				return err
			}
			time.Sleep(time.Duration(req.TokenIDs[0]%3) * time.Millisecond)
		}
		if req.TokenIDs[0]%7 == 0 {
			return errors.New("failed")
		}
		return nil
	})
	s := New(next, ws, Config{Model: "m", QueueMax: 1000, Capacity: 2, QueueTimeout: 10 * time.Second})
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%4)*time.Millisecond+time.Millisecond)
			if i%2 == 0 {
				ctx, cancel = context.WithCancel(context.Background())
			}
			defer cancel()
			_ = s.Generate(ctx, &backend.Request{TokenIDs: []uint32{uint32(i)}}, func(*backend.Output) error { return nil })
		})
	}
	wg.Wait()
	if in, unplaced, waiting := s.Load(); len(in) != 0 || unplaced != 0 || waiting != 0 {
		t.Errorf("left over: in flight %v, unplaced %d, waiting %d", in, unplaced, waiting)
	}
}
