package migration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dynamo-go/dynamo/pkg/backend"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// mockEngine is the reference tests' engine: the first request has
// token_ids [1 2 3] and max_tokens N; output tokens are 101, 102, ... On
// every call it checks the context id and that max_tokens (and min_tokens)
// went down by exactly the tokens appended to the prompt.
type mockEngine struct {
	t        *testing.T
	id       string
	maxTok   uint32
	minTok   uint32
	behave   func(call int) (ok int, fail error, failAtStart bool)
	mu       sync.Mutex
	calls    int
	requests []*backend.Request
}

func (m *mockEngine) Generate(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
	m.mu.Lock()
	call := m.calls
	m.calls++
	m.requests = append(m.requests, req)
	m.mu.Unlock()
	rc, _ := runtime.FromContext(ctx)
	if rc == nil || rc.ID() != m.id {
		m.t.Errorf("call %d: context id %v, want %q", call, rc, m.id)
	}
	done := len(req.TokenIDs) - 3
	if got, want := *req.StopConditions.MaxTokens, m.maxTok-uint32(done); got != want {
		m.t.Errorf("call %d: max_tokens %d after %d generated tokens, want %d", call, got, done, want)
	}
	if req.StopConditions.MinTokens != nil {
		want := uint32(0)
		if int(m.minTok) > done {
			want = m.minTok - uint32(done)
		}
		if got := *req.StopConditions.MinTokens; got != want {
			m.t.Errorf("call %d: min_tokens %d, want %d", call, got, want)
		}
	}
	for i, id := range req.TokenIDs[3:] {
		if id != uint32(101+i) {
			m.t.Errorf("call %d: appended token %d is %d, want %d", call, i, id, 101+i)
		}
	}
	ok, fail, atStart := m.behave(call)
	if fail != nil && atStart {
		return fail
	}
	left := int(*req.StopConditions.MaxTokens)
	for i := 0; i < left; i++ {
		if fail != nil && i == ok {
			return fail
		}
		out := backend.Tokens(uint32(101 + done + i))
		if i == left-1 {
			out = backend.Length(uint32(101 + done + i))
		}
		if err := emit(out); err != nil {
			return err
		}
	}
	return nil
}

var (
	noResponders = runtime.NewError(runtime.TypeCannotConnect, "no responders")
	streamEnded  = runtime.NewError(runtime.TypeDisconnected, "%s", runtime.MsgStreamEnded)
)

type result struct {
	tokens []uint32
	err    error
	reg    *prometheus.Registry
	eng    *mockEngine
}

func runStage(t *testing.T, limit int, req *backend.Request, eng *mockEngine, maxSeqLen int) result {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg, "dynamo_frontend")
	if err != nil {
		t.Fatal(err)
	}
	eng.t, eng.id = t, "req-1"
	eng.maxTok = *req.StopConditions.MaxTokens
	if req.StopConditions.MinTokens != nil {
		eng.minTok = *req.StopConditions.MinTokens
	}
	s := New(eng, Config{Model: "m", Limit: limit, MaxSeqLen: maxSeqLen, Metrics: m})
	rc := runtime.NewContext(context.Background(), "req-1")
	defer rc.Release()
	var toks []uint32
	err = s.Generate(rc, req, func(o *backend.Output) error {
		toks = append(toks, o.TokenIDs...)
		return nil
	})
	return result{toks, err, reg, eng}
}

func request(maxTokens uint32) *backend.Request {
	return &backend.Request{Model: "m", TokenIDs: []uint32{1, 2, 3}, StopConditions: backend.StopConditions{MaxTokens: backend.Ptr(maxTokens)}}
}

func (r result) count(kind string) float64 {
	return testutil.ToFloat64(mustCounter(r.reg, kind))
}

func mustCounter(reg *prometheus.Registry, kind string) prometheus.Collector {
	mfs, _ := reg.Gather()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})
	for _, mf := range mfs {
		if mf.GetName() != "dynamo_frontend_model_migration_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "migration_type" && l.GetValue() == kind {
					c.Add(m.GetCounter().GetValue())
				}
			}
		}
	}
	return c
}

func seq(from, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(from + i)
	}
	return out
}

func TestRetryManagerTable(t *testing.T) {
	always := func(err error, ok int, atStart bool) func(int) (int, error, bool) {
		return func(int) (int, error, bool) { return ok, err, atStart }
	}
	cases := []struct {
		name        string
		limit       int
		req         *backend.Request
		behave      func(call int) (int, error, bool)
		wantTokens  []uint32
		wantErr     string
		newReq, ong float64
		calls       int
	}{
		{"no migration", 0, request(10), always(nil, 0, false), seq(101, 10), "", 0, 0, 1},
		{"new request migration", 3, request(10), func(c int) (int, error, bool) {
			if c == 0 {
				return 0, noResponders, true
			}
			return 0, nil, false
		}, seq(101, 10), "", 1, 0, 2},
		{"ongoing request migration", 3, request(10), func(c int) (int, error, bool) {
			if c == 0 {
				return 5, streamEnded, false
			}
			return 0, nil, false
		}, seq(101, 10), "", 0, 1, 2},
		{"new request indefinite failure", 3, request(10), always(noResponders, 0, true), nil, "no responders", 4, 0, 4},
		{"ongoing then connect failures", 3, request(10), func(c int) (int, error, bool) {
			if c == 0 {
				return 3, streamEnded, false
			}
			return 0, noResponders, true
		}, seq(101, 3), runtime.MsgStreamEnded, 3, 1, 4},
		{"ongoing indefinite stream errors", 3, request(10), func(c int) (int, error, bool) {
			if c == 0 {
				return 3, streamEnded, false
			}
			return 0, streamEnded, false
		}, seq(101, 3), runtime.MsgStreamEnded, 0, 4, 4},
		{"no migration for guided decoding", 3, func() *backend.Request {
			r := request(10)
			r.SamplingOptions.GuidedDecoding = json.RawMessage(`{"json":{"type":"object"}}`)
			return r
		}(), always(streamEnded, 3, false), seq(101, 3), runtime.MsgStreamEnded, 0, 0, 1},
		{"no migration for n > 1", 3, func() *backend.Request {
			r := request(10)
			r.SamplingOptions.N = backend.Ptr(2)
			return r
		}(), always(streamEnded, 3, false), seq(101, 3), runtime.MsgStreamEnded, 0, 0, 1},
		{"no migration for a pinned worker", 3, func() *backend.Request {
			r := request(10)
			r.Routing = &backend.Routing{BackendInstanceID: backend.Ptr(uint64(7))}
			return r
		}(), always(streamEnded, 3, false), seq(101, 3), runtime.MsgStreamEnded, 0, 0, 1},
		{"min_tokens decreases too", 3, func() *backend.Request {
			r := request(10)
			r.StopConditions.MinTokens = backend.Ptr(uint32(8))
			return r
		}(), func(c int) (int, error, bool) {
			if c == 0 {
				return 5, streamEnded, false
			}
			return 0, nil, false
		}, seq(101, 10), "", 0, 1, 2},
		{"engine error from a healthy worker is not migrated", 3, request(10),
			always(runtime.NewError(runtime.TypeInvalidArgument, "bad request"), 2, false), seq(101, 2), "bad request", 0, 0, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runStage(t, c.limit, c.req, &mockEngine{behave: c.behave}, 0)
			if (r.err == nil) != (c.wantErr == "") || (r.err != nil && !strings.Contains(r.err.Error(), c.wantErr)) {
				t.Fatalf("error %v, want %q", r.err, c.wantErr)
			}
			if !equal(r.tokens, c.wantTokens) {
				t.Errorf("tokens %v, want %v", r.tokens, c.wantTokens)
			}
			if n, o := r.count(TypeNewRequest), r.count(TypeOngoing); n != c.newReq || o != c.ong {
				t.Errorf("migrations new=%v ongoing=%v, want %v %v", n, o, c.newReq, c.ong)
			}
			if r.eng.calls != c.calls {
				t.Errorf("engine called %d times, want %d", r.eng.calls, c.calls)
			}
		})
	}
}

func equal(a, b []uint32) bool {
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

func TestNoInstanceOnRetryGivesTheOriginalError(t *testing.T) {
	noInstances := errors.New("router: no instances found for endpoint dynamo/backend/generate")
	r := runStage(t, 3, request(10), &mockEngine{behave: func(c int) (int, error, bool) {
		if c == 0 {
			return 3, streamEnded, false
		}
		return 0, noInstances, true // not migratable: give up at once
	}}, 0)
	if r.err == nil || !strings.Contains(r.err.Error(), runtime.MsgStreamEnded) || r.eng.calls != 2 {
		t.Fatalf("err %v after %d calls, want the original Disconnected error after 2 calls", r.err, r.eng.calls)
	}
}

func TestContextStoppedBeforeStream(t *testing.T) {
	eng := &mockEngine{t: t, id: "req-1", maxTok: 10, behave: func(int) (int, error, bool) { return 0, nil, false }}
	s := New(eng, Config{Model: "m", Limit: 3})
	rc := runtime.NewContext(context.Background(), "req-1")
	defer rc.Release()
	rc.Stop()
	err := s.Generate(rc, request(10), func(*backend.Output) error { return nil })
	if !errors.Is(err, ErrStopped) || eng.calls != 0 {
		t.Fatalf("err %v after %d calls, want ErrStopped and no call", err, eng.calls)
	}
}

func TestStoppedDuringAFailureIsNotRetried(t *testing.T) {
	rc := runtime.NewContext(context.Background(), "req-1")
	defer rc.Release()
	eng := &mockEngine{behave: func(c int) (int, error, bool) {
		rc.Stop() // the client went away while the worker failed
		return 2, streamEnded, false
	}}
	eng.t, eng.id, eng.maxTok = t, "req-1", 10
	s := New(eng, Config{Model: "m", Limit: 3})
	err := s.Generate(rc, request(10), func(*backend.Output) error { return nil })
	if err == nil || eng.calls != 1 {
		t.Fatalf("err %v after %d calls, want the original error and one call", err, eng.calls)
	}
}

func TestMaxSeqLen(t *testing.T) {
	t.Run("prompt over the cap: no migration", func(t *testing.T) {
		r := runStage(t, 3, request(10), &mockEngine{behave: func(int) (int, error, bool) { return 3, streamEnded, false }}, 2)
		if r.err == nil || r.eng.calls != 1 || testutil.ToFloat64(seqLenCounter(r.reg)) != 1 {
			t.Errorf("err %v calls %d exceeded %v", r.err, r.eng.calls, testutil.ToFloat64(seqLenCounter(r.reg)))
		}
	})
	t.Run("cap reached mid-stream disables migration", func(t *testing.T) {
		r := runStage(t, 3, request(10), &mockEngine{behave: func(int) (int, error, bool) { return 5, streamEnded, false }}, 6)
		if r.err == nil || r.eng.calls != 1 || testutil.ToFloat64(seqLenCounter(r.reg)) != 1 || !equal(r.tokens, seq(101, 5)) {
			t.Errorf("err %v calls %d tokens %v", r.err, r.eng.calls, r.tokens)
		}
	})
	t.Run("a cap that is never reached changes nothing", func(t *testing.T) {
		r := runStage(t, 3, request(10), &mockEngine{behave: func(c int) (int, error, bool) {
			if c == 0 {
				return 5, streamEnded, false
			}
			return 0, nil, false
		}}, 13)
		if r.err != nil || !equal(r.tokens, seq(101, 10)) {
			t.Errorf("err %v tokens %v", r.err, r.tokens)
		}
	})
}

func seqLenCounter(reg *prometheus.Registry) prometheus.Collector {
	mfs, _ := reg.Gather()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})
	for _, mf := range mfs {
		if mf.GetName() == "dynamo_frontend_model_migration_max_seq_len_exceeded_total" {
			for _, m := range mf.GetMetric() {
				c.Add(m.GetCounter().GetValue())
			}
		}
	}
	return c
}

func TestFailureAfterTheFinalOutputIsNotAnError(t *testing.T) {
	r := runStage(t, 3, request(4), &mockEngine{behave: func(int) (int, error, bool) { return 0, nil, false }}, 0)
	if r.err != nil || len(r.tokens) != 4 {
		t.Fatalf("%v %v", r.err, r.tokens)
	}
	eng := backend.GeneratorFunc(func(ctx context.Context, req *backend.Request, emit func(*backend.Output) error) error {
		_ = emit(backend.Length(101))
		return streamEnded // the final marker was lost after the terminal output
	})
	rc := runtime.NewContext(context.Background(), "x")
	defer rc.Release()
	s := New(eng, Config{Model: "m", Limit: 3})
	if err := s.Generate(rc, request(1), func(*backend.Output) error { return nil }); err != nil {
		t.Errorf("got %v: the client already has the whole answer", err)
	}
}

func TestMigratable(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{noResponders, true},
		{streamEnded, true},
		{runtime.NewError(runtime.TypeEngineShutdown, "draining"), true},
		{runtime.NewError(runtime.TypeConnectionTimeout, "t"), true},
		{runtime.NewError(runtime.TypeResourceExhausted, "full"), false},
		{runtime.NewError(runtime.TypeInvalidArgument, "bad"), false},
		{runtime.ErrKilled, false},
		{context.Canceled, false},
		{errors.New("plain"), false},
	}
	for _, c := range cases {
		if got := Migratable(c.err); got != c.want {
			t.Errorf("Migratable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// A worker that refuses the re-issue of a broken stream before it starts
// (full, or an ack timeout on a live worker) is busy, not gone: the
// answer goes on elsewhere, within the migration budget. A first attempt
// it refuses is not retried here: the admission stage above queues it.
func TestWorkerRefusalOfAReissueIsRetried(t *testing.T) {
	for _, refusal := range []error{
		runtime.NewError(runtime.TypeResourceExhausted, "worker queue is full"),
		fmt.Errorf("%w: %w", runtime.ErrAckTimeout, runtime.NewError(runtime.TypeWorkerOverloaded, "no ack")),
	} {
		r := runStage(t, 3, request(10), &mockEngine{behave: func(c int) (int, error, bool) {
			switch c {
			case 0:
				return 3, streamEnded, false
			case 1:
				return 0, refusal, true
			}
			return 0, nil, false
		}}, 0)
		if r.err != nil || !equal(r.tokens, seq(101, 10)) || r.eng.calls != 3 {
			t.Errorf("%v on the re-issue: %v after %d calls, tokens %v; want the whole answer after 3 calls", refusal, r.err, r.eng.calls, r.tokens)
		}
		first := runStage(t, 3, request(10), &mockEngine{behave: func(int) (int, error, bool) { return 0, refusal, true }}, 0)
		if !errors.Is(first.err, refusal) || first.eng.calls != 1 {
			t.Errorf("%v on the first attempt: %v after %d calls; want it returned at once", refusal, first.err, first.eng.calls)
		}
	}
}
